# jroce container image.
#
#   docker build -t jroce .
#   docker run --rm --network host -v "$PWD/cli/examples:/data:ro" jroce inspect /data/sample.pcap
#
# The build skips the tests: they read golden vectors from ../shared beside the
# checkout, which is outside the build context. CI runs them (.ci/run).

# ---- stage 1: build the fat jar
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN mvn -B -ntp -DskipTests package

# ---- stage 2: runtime
FROM eclipse-temurin:17-jre
COPY --from=build /src/cli/target/jroce.jar /opt/jroce/jroce.jar
WORKDIR /data
# RoCEv2: InfiniBand transport over UDP, destination port 4791
EXPOSE 4791/udp
ENTRYPOINT ["java", "-jar", "/opt/jroce/jroce.jar"]
CMD ["--help"]
