package io.jroce.cli.inspect;

import io.jroce.cli.Main;
import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.LinkType;
import io.jroce.wire.pcap.PcapReader;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Opening the capture {@code inspect} reads, for the packet listing and the flow view alike: a file that is
 * missing, unreadable, a directory, not a capture, or of a link type inspect cannot decode gets one line on
 * the error stream, and the caller exits with {@link Main#EXIT_USAGE}.
 */
final class CaptureFile {

    private CaptureFile() {
    }

    /**
     * The capture opened for reading, or null once the reason it cannot be read has been printed as
     * {@code NAME: FILE: reason}.
     */
    static CaptureReader open(Path capture, String name, PrintWriter err) {
        if (Files.isDirectory(capture)) {
            err.println(name + ": " + capture + ": is a directory");
            return null;
        }
        CaptureReader reader;
        try {
            reader = CaptureReader.open(capture);
        } catch (NoSuchFileException e) {
            err.println(name + ": " + capture + ": no such file");
            return null;
        } catch (AccessDeniedException e) {
            err.println(name + ": " + capture + ": permission denied");
            return null;
        } catch (IOException e) {
            err.println(name + ": " + Main.describe(e));
            return null;
        }
        // a pcap file has one link type; a pcapng file has one per interface, checked per frame
        if (reader instanceof PcapReader pcap && !LinkType.isSupported(pcap.linkType())) {
            err.println(name + ": " + capture + ": link type " + LinkType.name(pcap.linkType())
                    + " not supported (Ethernet, Linux cooked SLL/SLL2, raw IP and loopback are)");
            try {
                reader.close();
            } catch (IOException ignored) {
                // the file was only read; nothing is lost
            }
            return null;
        }
        return reader;
    }
}
