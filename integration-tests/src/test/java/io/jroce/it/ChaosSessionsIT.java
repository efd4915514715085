package io.jroce.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two-process reliability soak: two {@code jroce node} processes, both with {@code --chaos} (drop,
 * reorder, duplication, corruption in both directions), run a fixed number of mixed operations (RDMA WRITE,
 * READ back, FETCH_ADD, SEND) generated into session scripts. Every payload is checked byte for byte by the
 * sessions on both ends (the writer's pattern against what the READ returns; the receiver's buffer against
 * the sender's pattern), every fetch-add returns the count before it, and the counter ends at the number of
 * adds. Longer run by hand: {@code -Djroce.chaos.rounds=500}.
 */
class ChaosSessionsIT {
    @TempDir
    Path work;

    @Test
    void mixedTrafficUnderChaosOnBothNodesCompletesVerified() throws Exception {
        int rounds = Integer.getInteger("jroce.chaos.rounds", 40);
        long seed = Long.getLong("jroce.seed", System.nanoTime());
        System.out.println("ChaosSessionsIT: " + rounds + " rounds, chaos seeds " + seed + "/" + (seed + 1));
        StringBuilder server = new StringBuilder("""
                cq cq depth=256
                qp q cq=cq recv_wr=%d
                mr inbox size=%dk
                mr tgt size=64k
                mr counter size=8
                fill counter u64=0
                """.formatted(rounds + 1, 4 * rounds));
        for (int i = 1; i <= rounds; i++) {
            server.append("recv mr=inbox offset=").append(4 * (i - 1)).append("k len=4k wr_id=").append(i).append('\n');
        }
        server.append("listen publish=tgt,counter\n");
        for (int i = 1; i <= rounds; i++) {
            server.append("expect wr_id=").append(i).append(" opcode=RECV len=4096 timeout=120s\n");
            server.append("compare inbox offset=").append(4 * (i - 1)).append("k len=4k pattern=random seed=").append(i).append('\n');
        }
        server.append("compare counter u64=").append(rounds).append('\n');

        StringBuilder client = new StringBuilder("""
                cq cq depth=256
                qp q cq=cq
                mr data size=64k
                mr back size=64k
                mr result size=8
                connect
                """);
        for (int i = 1; i <= rounds; i++) {
            int w = 10 * i;
            client.append("fill data pattern=random seed=").append(i).append('\n');
            client.append("write mr=data len=64k remote=tgt wr_id=").append(w).append('\n');
            client.append("expect wr_id=").append(w).append(" opcode=RDMA_WRITE timeout=120s\n");
            client.append("read mr=back len=64k remote=tgt wr_id=").append(w + 1).append('\n');
            client.append("expect wr_id=").append(w + 1).append(" opcode=RDMA_READ len=65536 timeout=120s\n");
            client.append("compare back len=64k pattern=random seed=").append(i).append('\n');
            client.append("fadd mr=result remote=counter add=1 wr_id=").append(w + 2).append('\n');
            client.append("expect wr_id=").append(w + 2).append(" opcode=FETCH_ADD len=8 timeout=120s\n");
            client.append("compare result len=8 u64=").append(i - 1).append('\n');
            client.append("send mr=data len=4k wr_id=").append(w + 3).append('\n');
            client.append("expect wr_id=").append(w + 3).append(" opcode=SEND timeout=120s\n");
        }
        Files.writeString(work.resolve("server.jroce"), server);
        Files.writeString(work.resolve("client.jroce"), client);

        String chaosA = "drop=0.02,reorder=0.02,dup=0.01,corrupt=0.001,seed=" + seed;
        String chaosB = "drop=0.02,reorder=0.02,dup=0.01,corrupt=0.001,seed=" + (seed + 1);
        try (Jroce.Run a = Jroce.start(work, "node", "--bind", "127.0.15.1", "--port", "29900", "--linger", "10s", "--chaos", chaosA,
                "--script", work.resolve("server.jroce").toString());
             Jroce.Run b = Jroce.start(work, "node", "--bind", "127.0.15.2", "--peer", "127.0.15.1", "--port", "29900", "--linger", "10s",
                     "--chaos", chaosB, "--script", work.resolve("client.jroce").toString())) {
            assertEquals(0, b.await(300), b.describe() + "\n" + a.describe());
            assertEquals(0, a.await(120), a.describe() + "\n" + b.describe());
            String both = a.out() + a.err() + b.out() + b.err();
            assertTrue(both.contains("dropped") || both.contains("drop"), "the chaos counters are reported:\n" + both);
            System.out.println("ChaosSessionsIT: " + b.out().lines().filter(l -> l.contains("chaos") || l.contains("retrans")).toList());
        }
    }
}
