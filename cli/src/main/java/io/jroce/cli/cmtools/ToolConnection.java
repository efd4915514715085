package io.jroce.cli.cmtools;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.cm.CmId;

import java.nio.ByteBuffer;

/**
 * What every connection of a connection-manager test tool has: its index in the run, its id, a protection domain,
 * and the message buffers for {@code count} messages of {@code size} bytes each way (none when {@code count} is 0).
 * The queue pair and its completion queues are the tool's ({@link RcConnection}, {@link UdConnection}).
 */
abstract class ToolConnection implements AutoCloseable {
    final int index;
    final CmId id;
    final int count;
    final int size;
    final ProtectionDomain pd;
    final MemoryRegion sendMr;
    final MemoryRegion recvMr;
    /** Up: ESTABLISHED came (RC), or the SIDR exchange succeeded (UD). */
    boolean connected;

    /**
     * {@code recvBytes}: the receive buffer's size; {@code first}: the letter the send buffer's content starts from
     * (any content: nobody checks it).
     */
    ToolConnection(int index, CmId id, Device dev, int count, int size, int recvBytes, char first) {
        this.index = index;
        this.id = id;
        this.count = count;
        this.size = size;
        this.pd = dev.allocPd();
        if (count > 0) {
            sendMr = pd.allocateAndRegister(size, 0);
            recvMr = pd.allocateAndRegister(recvBytes, Access.LOCAL_WRITE);
            ByteBuffer b = sendMr.buffer();
            for (int i = 0; i < size; i++) b.put(i, (byte) (first + (index + i) % 26));
        } else {
            sendMr = null;
            recvMr = null;
        }
    }

    /** Posts all {@code count} receives: before the REQ (or SIDR_REQ) is sent or answered, as the C tools do. */
    abstract void postRecvs();

    /** Deregisters the buffers, after the tool has destroyed its QP (the id is the run's to destroy). */
    final void deregister() {
        if (sendMr != null) sendMr.deregister();
        if (recvMr != null) recvMr.deregister();
    }

    @Override
    public abstract void close();
}
