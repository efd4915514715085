package io.jroce.wire.pcap;

import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A capture file read frame by frame, whatever its format: classic pcap ({@link PcapReader}) or pcapng
 * ({@link PcapngReader}), told apart by the first four bytes. Every {@link PcapFrame} carries its own link
 * type, so a pcapng file with interfaces of different link types reads like any other.
 *
 * <p>Frames are streamed: a reader holds one frame at a time plus a small per-interface table, never the
 * whole file.
 */
public interface CaptureReader extends Closeable {

    /**
     * The next frame, or null at the end of the capture.
     *
     * @throws IOException with a one-line message if the file ends inside a record or a length is implausible
     */
    PcapFrame next() throws IOException;

    /** Frames returned so far. */
    long framesRead();

    /** "pcap" or "pcapng". */
    String format();

    /** Opens a capture file of either format. */
    static CaptureReader open(Path file) throws IOException {
        return open(Files.newInputStream(file), file.toString());
    }

    /**
     * Reads a capture of either format from a stream; {@code name} is used in error messages. Closing the
     * reader closes the stream.
     */
    static CaptureReader open(InputStream stream, String name) throws IOException {
        BufferedInputStream in = stream instanceof BufferedInputStream b ? b : new BufferedInputStream(stream, 1 << 16);
        byte[] magic = new byte[4];
        int n;
        try {
            in.mark(4);
            n = in.readNBytes(magic, 0, 4);
            in.reset();
        } catch (IOException | RuntimeException e) {
            CaptureBytes.closeAfter(in, e);
            throw e;
        }
        if (n == 4 && PcapngReader.isPcapng(magic)) {
            return new PcapngReader(in, name);
        }
        return new PcapReader(in, name);
    }

    /** Reads every frame of a capture file of either format (for small files and tests). */
    static List<PcapFrame> readAll(Path file) throws IOException {
        try (CaptureReader r = open(file)) {
            List<PcapFrame> out = new ArrayList<>();
            for (PcapFrame f; (f = r.next()) != null; ) {
                out.add(f);
            }
            return out;
        }
    }
}
