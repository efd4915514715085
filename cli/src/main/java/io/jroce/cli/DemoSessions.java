package io.jroce.cli;

/**
 * The sessions {@code jroce demo} runs, carried in the jar so the demo works wherever the jar is: exact copies
 * of {@code cli/examples/server.jroce} and {@code cli/examples/client.jroce} ({@code DemoCommandTest} fails
 * when they differ: edit the example, then paste it here).
 */
final class DemoSessions {
    private DemoSessions() {
    }

    /** cli/examples/server.jroce: the passive side, node A. */
    static final String SERVER = """
            # jroce session: the passive side of the demo exchange (jroce demo runs it on 127.0.0.1).
            #
            #   jroce node --bind 127.0.0.1 --script cli/examples/server.jroce
            #   jroce node --bind 127.0.0.2 --peer 127.0.0.1 --script cli/examples/client.jroce
            #
            # The client SENDs to us, RDMA WRITEs into 'target', RDMA READs 'source' and runs atomics on 'counter';
            # we check every completion and every byte, then say goodbye. Any difference ends the session with status 1.

            cq cq depth=64
            qp q cq=cq
            mr inbox size=64k                         # SENDs land here
            mr target size=1m                         # the client WRITEs 1 MiB here
            mr source size=1m                         # the client READs these 1 MiB
            mr counter size=8                         # one 64-bit word for the client's atomics
            mr reply size=64 access=local_write       # local only: never published

            fill source pattern=random seed=42
            fill counter u64=100

            # Receives go first (the QP is in INIT from creation), so no SEND of the client ever finds the queue empty.
            recv mr=inbox len=4k wr_id=1
            recv mr=inbox offset=4k len=4k wr_id=2
            recv mr=inbox offset=8k len=4k wr_id=3
            recv wr_id=4                              # no buffer: an RDMA WRITE with immediate consumes a receive
            recv mr=inbox offset=12k len=64 wr_id=5

            listen publish=target,source,counter

            # 1. SEND of 4 KiB
            expect wr_id=1 opcode=RECV len=4096 imm=none
            compare inbox len=4k sha256=c8f5d0341d54d951a71b136e6e2afcb14d11ed8489a7ae126a8fee0df6ecf193

            # 2. SEND with immediate data, solicited
            expect wr_id=2 opcode=RECV len=16 imm=0xc0ffee
            compare inbox offset=4k text="hello over RoCE!"

            # 3. inline SEND: the client changed its buffer right after posting, we must still see the old bytes
            expect wr_id=3 opcode=RECV len=5
            compare inbox offset=8k text=ping!

            # 4. RDMA WRITE of 1 MiB: an unsignaled first half, then the second half with immediate data
            expect wr_id=4 opcode=RECV_RDMA_WITH_IMM len=524288 imm=0x1234
            compare target sha256=796057759e9f4a8da1723b35b4bea2056e6192743a80555ece2fb5e90fbf838d

            # 5. "done", sent with invalidate: the client has finished READ, FETCH_ADD +5 and CMP_SWAP 105 -> 999,
            #    and has revoked its own access to 'target'
            expect wr_id=5 opcode=RECV len=4 inv=$target.rkey
            compare inbox offset=12k text=done
            compare counter u64=999

            # 6. goodbye; waiting for its completion means the client has it before we close
            fill reply text=bye
            send mr=reply len=3 wr_id=6
            expect wr_id=6 opcode=SEND
            """;

    /** cli/examples/client.jroce: the active side, node B. */
    static final String CLIENT = """
            # jroce session: the active side of the demo exchange (jroce demo runs it on 127.0.0.2).
            #
            #   jroce node --bind 127.0.0.1 --script cli/examples/server.jroce
            #   jroce node --bind 127.0.0.2 --peer 127.0.0.1 --script cli/examples/client.jroce
            #
            # SEND (plain, with immediate, inline, with invalidate), RDMA WRITE (unsignaled, with immediate),
            # RDMA READ and both atomics against the regions the server publishes, each checked on arrival.

            cq cq depth=64
            qp q cq=cq
            mr data size=1m
            mr result size=16                         # the atomics' original values land here
            mr bye size=64

            recv mr=bye wr_id=100                     # the server's goodbye
            connect                                   # host: --peer; regions of the server: target, source, counter

            # 1. SEND of 4 KiB
            fill data len=4k pattern=seq
            send mr=data len=4k wr_id=1
            expect wr_id=1 opcode=SEND

            # 2. SEND with immediate data, solicited
            fill data text="hello over RoCE!"
            send mr=data len=16 imm=0xc0ffee solicited wr_id=2
            expect wr_id=2 opcode=SEND

            # 3. inline SEND: the bytes are copied when posted, so the buffer may change at once
            fill data text=ping!
            send mr=data len=5 inline wr_id=3
            fill data text=XXXXX
            expect wr_id=3 opcode=SEND

            # 4. RDMA WRITE of 1 MiB: the first half unsignaled (no completion of its own), the second half with
            #    immediate data; the one completion covers both, since a send queue completes in order
            fill data pattern=random seed=7
            write mr=data len=512k remote=target unsignaled wr_id=4
            write mr=data offset=512k len=512k remote=target roffset=512k imm=0x1234 wr_id=5
            expect wr_id=5 opcode=RDMA_WRITE

            # 5. RDMA READ of 1 MiB
            read mr=data remote=source wr_id=6
            expect wr_id=6 opcode=RDMA_READ len=1048576
            compare data pattern=random seed=42
            compare data sha256=5b2605c7135a3f8c54d75039514f0bcb798cfe1a8d74f57380d45aaadea36dca

            # 6. atomics on the server's counter (100): +5, then 105 -> 999; each returns the value it found
            fadd mr=result remote=counter add=5 wr_id=7
            expect wr_id=7 opcode=FETCH_ADD len=8
            compare result len=8 u64=100
            cas mr=result offset=8 remote=counter compare=105 swap=999 wr_id=8
            expect wr_id=8 opcode=COMP_SWAP len=8
            compare result offset=8 u64=105

            # 7. "done", invalidating the server's 'target' rkey (SEND_WITH_INV): no more WRITEs there
            fill data text=done
            send mr=data len=4 inv=target wr_id=9
            expect wr_id=9 opcode=SEND

            # 8. the server checked everything and says goodbye
            expect wr_id=100 opcode=RECV len=3
            compare bye len=3 text=bye
            """;
}
