package io.jroce.endpoint.cm;

import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.ProtectionDomain;

import java.io.IOException;
import java.net.InetAddress;
import java.util.function.UnaryOperator;

/**
 * Two devices on 127.77.41.x (UDP port 0, so tests do not collide) with a CM agent each over {@link MadLoopback}; each
 * agent's peer UDP port is the other device's, so the yielded QPs reach each other.
 */
final class CmNet implements AutoCloseable {
    static final InetAddress A = addr("127.77.41.1");
    static final InetAddress B = addr("127.77.41.2");

    final MadLoopback mads = new MadLoopback();
    final Device devA;
    final Device devB;
    final CmAgent cmA;
    final CmAgent cmB;
    final ProtectionDomain pdA;
    final ProtectionDomain pdB;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final CmEventChannel chA = new CmEventChannel();
    final CmEventChannel chB = new CmEventChannel();

    CmNet() throws IOException {
        this(c -> c);
    }

    CmNet(UnaryOperator<CmConfig> tweak) throws IOException {
        this(tweak, tweak);
    }

    CmNet(UnaryOperator<CmConfig> tweakA, UnaryOperator<CmConfig> tweakB) throws IOException {
        this(A, B, tweakA, tweakB);
    }

    /** The two devices on addresses of the caller's choosing. */
    CmNet(InetAddress a, InetAddress b, UnaryOperator<CmConfig> tweakA, UnaryOperator<CmConfig> tweakB) throws IOException {
        devA = Device.open(new DeviceConfig(a).port(0));
        devB = Device.open(new DeviceConfig(b).port(0));
        cmA = CmAgent.open(devA, mads.port(a), tweakA.apply(testConfig(1).peerUdpPort(devB.port())));
        cmB = CmAgent.open(devB, mads.port(b), tweakB.apply(testConfig(2).peerUdpPort(devA.port())));
        pdA = devA.allocPd();
        pdB = devB.allocPd();
        cqA = devA.createCq(64);
        cqB = devB.createCq(64);
    }

    /** Short timeouts: a REQ is resent after 2 ms + 64 ms, up to 4 times. */
    static CmConfig testConfig(long seed) {
        return CmConfig.defaults().cmResponseTimeout(14).packetLifeTime(8).maxCmRetries(4).seed(seed);
    }

    static InetAddress addr(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        cmA.close();
        cmB.close();
        devA.close();
        devB.close();
    }
}
