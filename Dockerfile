# jroce container image.
#
#   docker build -t jroce .
#   docker run --rm --network host -v "$PWD/cli/examples:/data:ro" jroce inspect /data/sample.pcap
#
# Two nodes in two containers (host networking: both bind UDP 4791 on the host's addresses):
#   docker run -d --name jroce-a --network host jroce node --bind 127.0.0.1 --script /opt/jroce/examples/server.jroce
#   docker run --rm --network host jroce node --bind 127.0.0.2 --peer 127.0.0.1 --script /opt/jroce/examples/client.jroce
#
# The build runs the unit tests (Maven's package phase: surefire, golden vectors from testdata/); the
# integration tests (failsafe, `mvn verify`) need tshark, tcpdump and network namespaces, so CI runs them
# (.ci/run).

# ---- stage 1: build the fat jar
# (not the verbs module: its C library needs rdma-core's headers, which this image lacks, so the build
# leaves it out; the image runs the jroce command only)
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN mvn -B -ntp package

# ---- stage 2: runtime
FROM eclipse-temurin:17-jre
COPY --from=build /src/cli/target/jroce.jar /opt/jroce/jroce.jar
# example sessions for 'jroce node --script /opt/jroce/examples/server.jroce' (and client.jroce)
COPY --from=build /src/cli/src/main/resources/io/jroce/cli/examples /opt/jroce/examples
WORKDIR /data
# RoCEv2: InfiniBand transport over UDP, destination port 4791
EXPOSE 4791/udp
ENTRYPOINT ["java", "-jar", "/opt/jroce/jroce.jar"]
CMD ["--help"]
