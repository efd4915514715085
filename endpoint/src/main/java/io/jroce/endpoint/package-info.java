/**
 * A software RoCEv2 endpoint (RC and UD queue pairs) with a verbs-shaped API, laid out like rdma_rxe's single directory
 * (drivers/infiniband/sw/rxe): one package, because the engines share the QP context through
 * package-private fields, the way rxe's files share {@code struct rxe_qp}.
 *
 * <h2>Verbs objects (rxe_verbs.c, rxe_mr.c, rxe_cq.c)</h2>
 * <ul>
 * <li>{@code Device}: opens its event loops and sockets ({@code Shards}), hands out QP numbers, PDs and CQs;
 * each shard's {@code QpTable} holds its QPs.</li>
 * <li>{@code QpnAllocator}: QP numbers, handed out cyclically from a random start, so a restarted process does not
 * reuse its predecessor's.</li>
 * <li>{@code DeviceConfig}: how a device is opened (address, port, clock, filter, pcap).</li>
 * <li>{@code AccessList}: the networks (CIDR prefixes) a device accepts datagrams from.</li>
 * <li>{@code ProtectionDomain}: registers memory and creates queue pairs.</li>
 * <li>{@code MemoryRegion}: registered memory, its keys and access rights.</li>
 * <li>{@code KeyTable}: the device's lkey/rkey lookup, lock-free.</li>
 * <li>{@code KernelPretouch}: at registration, has the kernel read one byte of every page, as {@code ibv_reg_mr}
 * does when it pins them.</li>
 * <li>{@code Access}: {@code IBV_ACCESS_*} flags.</li>
 * <li>{@code CompletionQueue}: the CQ ring, polling and notification.</li>
 * <li>{@code WorkCompletion}: one polled completion.</li>
 * <li>{@code WcStatus}: {@code IBV_WC_*} completion status.</li>
 * <li>{@code WcOpcode}: completion opcodes.</li>
 * <li>{@code SendWorkRequest}: a send WR as the application builds it.</li>
 * <li>{@code ReceiveWorkRequest}: a receive WR: wr_id and scatter list.</li>
 * <li>{@code Sge}: one scatter/gather element.</li>
 * <li>{@code WrOpcode}: {@code IBV_WR_*} send opcodes.</li>
 * <li>{@code SendFlags}: {@code IBV_SEND_*} flags.</li>
 * <li>{@code Mtu}: the five path MTUs.</li>
 * <li>{@code Gid}: a GID, IPv4-mapped for RoCEv2.</li>
 * <li>{@code AsyncEvent}: {@code IBV_EVENT_*} asynchronous events.</li>
 * <li>{@code VerbsException}: a refused verbs call, naming what to fix.</li>
 * <li>{@code RcConnect}: RESET&rarr;INIT&rarr;RTR&rarr;RTS towards a peer, the common connect sequence.</li>
 * <li>{@code AddressHandle}: a UD destination ({@code ibv_ah}): address and UDP port.</li>
 * </ul>
 *
 * <h2>The QP context and its rings (rxe_qp.c, rxe_queue.h)</h2>
 * <ul>
 * <li>{@code QueuePair}: the QP context, posting, modify/query, completion and flush.</li>
 * <li>{@code PostCheck}: what a post checks before it claims a slot, and the copy of a work request into it.</li>
 * <li>{@code QpInitAttr}: what a QP is created with ({@code ibv_qp_init_attr}).</li>
 * <li>{@code QpType}: RC or UD ({@code ibv_qp_type}).</li>
 * <li>{@code QpAttr}: modify/query attributes with their mask ({@code ibv_qp_attr}).</li>
 * <li>{@code QpState}: the QP states.</li>
 * <li>{@code QpStateTable}: legal transitions with their required and optional attributes.</li>
 * <li>{@code WorkQueue}: the ring: slots claimed and published by posting threads without a lock, the consumer
 * index, N slots for N-1 WQEs.</li>
 * <li>{@code SendQueue}: the ring of send WQEs.</li>
 * <li>{@code ReceiveQueue}: the ring of receive WQEs.</li>
 * <li>{@code SendWqe}: a send slot: the WR as posted plus transmit and completion progress.</li>
 * <li>{@code RecvWqe}: a receive slot: wr_id and resolved scatter list.</li>
 * </ul>
 *
 * <h2>Engines (rxe_req.c, rxe_comp.c, rxe_resp.c)</h2>
 * <ul>
 * <li>{@code Requester}: segments WQEs into packets, assigns PSNs, windows, rewinds for Go-Back-N.</li>
 * <li>{@code Completer}: ACKs, NAKs, READ responses and atomic ACKs retire send WQEs; retry and RNR.</li>
 * <li>{@code Responder}: checks and executes requests, answers with ACKs, NAKs and responses.</li>
 * <li>{@code UdReceiver}: UD receive: P_Key, state and Q_Key checks, the GRH area, delivery (rxe_recv.c, rxe_resp.c).</li>
 * <li>{@code ResponderResource}: a READ or atomic the responder remembers ({@code struct resp_res}).</li>
 * </ul>
 *
 * <h2>jroce-to-jroce extensions (negotiated; off for every other peer)</h2>
 * <ul>
 * <li>{@code JroceExtensions}: the extension flags a QP is given before RTR, and what each changes.</li>
 * <li>{@code LossRecovery}: where the requester's loss recovery differs: {@code GoBackN} (IBA) or
 * {@code SelectiveRepeat} (SACKs, holes resent once, READ responses placed past a gap).</li>
 * <li>{@code RequestOrder}: where the responder's treatment of a request past a gap differs: {@code InOrder} (IBA:
 * a sequence NAK) or {@code ReorderStore} (held, SACKed, executed when the gap closes).</li>
 * <li>{@code ReorderBuffer}: the selective-repeat responder's bounded store of requests past a gap.</li>
 * <li>{@code SackScoreboard}: the selective-repeat requester's SACKed PSNs and loss recovery state.</li>
 * <li>{@code PsnBitRing}: one bit per PSN of a window, set, cleared and measured a word at a time.</li>
 * <li>{@code CongestionWindow}: the requester's window policy; {@code CongestionControl} between jroce peers:
 * delay target, loss, CNP (DCQCN RP), BDP cap.</li>
 * <li>{@code PathRtt}: the smallest round trip a loop's congestion-controlled QPs measured to each peer address, the
 * base of their delay target.</li>
 * </ul>
 *
 * <h2>Who runs the device (rxe_task.c)</h2>
 * <ul>
 * <li>{@code DeviceAgent}: runs a shard's loop, on a thread of its own (dedicated) or on the application's threads
 * that poll and post (invoked, run to completion, with a standby thread while nobody polls).</li>
 * <li>{@code AgentMode}: dedicated or invoked, chosen per device.</li>
 * <li>{@code DeviceRunner}: the device's own work besides packets, on the loop that owns QP 1: the connection
 * manager runs there, with no thread of its own.</li>
 * </ul>
 *
 * <h2>Transport and timers (rxe_net.c, rxe_recv.c, rxe_icrc.c, rxe_mr.c)</h2>
 * <ul>
 * <li>{@code Transport}: one shard of a device: puts the parts below together, ends each cycle with the coalesced
 * ACKs and one flush, and is the {@code EngineContext} its QPs' engines see.</li>
 * <li>{@code UdpPort}: the socket, its options, batched receive and send, GSO/GRO, the flush (rxe_net.c).</li>
 * <li>{@code DirectReceive}: the epoll socket's {@code recvmmsg} through Netty's native array, each datagram handed on
 * as offset, length and sender, with no object per datagram.</li>
 * <li>{@code DirectSend}: a flush's only datagram through {@code sendmmsg}, not Netty's {@code sendto}, which copies
 * the address.</li>
 * <li>{@code SendEnvelope}: the reused {@code DatagramPacket} a packet leaves in through the channel.</li>
 * <li>{@code ReceivePath}: the checks and the dispatch of every datagram read (rxe_recv.c).</li>
 * <li>{@code TransmitPath}: packets started at their final size, their payload copied or left in the region to be
 * gathered, ICRC-stamped, counted, queued (rxe_net.c, rxe_icrc.c).</li>
 * <li>{@code GatherSend}: a flush's datagrams as iovecs in {@code sendmmsg}, the payload read from registered
 * memory, with {@code --gso} a run of one QP's equal-size packets as one {@code UDP_SEGMENT} message; what the
 * socket does not take at once is completed by a copy and queued on the channel.</li>
 * <li>{@code PacketOut}: the transmit path as the engines see it; {@code HeaderViews}: the flyweights they write with.</li>
 * <li>{@code EngineContext}: what an engine sees of its shard: the transmit path, clock, timers, counters, keys, flow.</li>
 * <li>{@code CopyData}: the one walk over a scatter/gather list, gather (into a packet, or as region pieces) and
 * scatter (rxe_mr.c copy_data).</li>
 * <li>{@code QpTable}: the QPs a shard owns, by number.</li>
 * <li>{@code ShardSteering}: the classic BPF program on the shards' reuseport group that has the kernel deliver each
 *     datagram to the socket of its QP's shard.</li>
 * <li>{@code ShardRouter}: datagrams one shard read for another shard's QP, handed over (where steering is off or
 *     refused, and for what the program cannot place).</li>
 * <li>{@code PcapTap}: the capture of what a shard sends and receives.</li>
 * <li>{@code Shards}: a device's event loops and sockets ({@code SO_REUSEPORT}), which QP each owns, summed counters.</li>
 * <li>{@code GsoBatcher}: without gathered send, groups equal-length packets to one peer into UDP GSO
 * super-datagrams.</li>
 * <li>{@code FlowBudget}: flow control: what the QPs of one transport may keep in flight against its receive buffer.</li>
 * <li>{@code BusyPollStrategy}: the event loop's select strategy in busy-poll mode (polls without sleeping for a bounded time).</li>
 * <li>{@code GroRecvAllocator}: receive buffers of a UDP GRO socket (64 KiB per read), and the count of coalesced reads.</li>
 * <li>{@code Timers}: the retransmit, RNR and probe timers of armed QPs.</li>
 * <li>{@code TimerWait}: ends the loop's wait at the timer wheel's next deadline.</li>
 * <li>{@code ForwardingIoHandler}: the base of the two wrappers of the loop's I/O handler ({@code DirectReceive}, {@code TimerWait}).</li>
 * <li>{@code Clock}: where timers read time; tests step it by hand.</li>
 * <li>{@code DatagramFilter}: the hook at the head of the pipeline (fault injection, taps).</li>
 * <li>{@code LeakDetection}: turns Netty's buffer leak detector off when a device opens, unless the user chose a
 * level.</li>
 * <li>{@code RecyclerTuning}: a Netty recycler batch large enough for a flush's burst, unless the user chose a
 * size.</li>
 * </ul>
 *
 * <h2>Warm-up</h2>
 * <ul>
 * <li>{@code Warmup}: runs every operation over the device's own socket before it is handed out.</li>
 * </ul>
 *
 * <h2>Counters (rxe_hw_counters.c)</h2>
 * <ul>
 * <li>{@code DeviceCounters}: per-device packets, bytes, retransmissions and drops.</li>
 * <li>{@code QpCounters}: per-QP packets, retries, NAKs, RNR and duplicates.</li>
 * <li>{@code DropReason}: why a received datagram was dropped, one counter each.</li>
 * </ul>
 *
 * <h2>Connection manager</h2>
 * <ul>
 * <li>{@code cm/}: the connection manager on QP 1 (ib_cm + rdma_cm's TCP and UDP port spaces) and its
 * librdmacm-shaped API (its own package: it uses the endpoint only through its public API, and runs on the
 * device's {@code DeviceRunner}).</li>
 * </ul>
 *
 * <h2>Fault injection</h2>
 * <ul>
 * <li>{@code fault/}: seeded drop, duplicate, reorder, delay and corrupt of datagrams, at random and by rule
 * (its own package: it reaches the endpoint only through {@code DatagramFilter}).</li>
 * </ul>
 */
package io.jroce.endpoint;
