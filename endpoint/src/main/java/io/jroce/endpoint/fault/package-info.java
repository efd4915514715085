/**
 * Seeded fault injection for a device's datagrams, plugged in as its {@code DatagramFilter} (after Aeron's
 * loss generators).
 * <ul>
 * <li>{@code FaultInjector}: the pipeline handler: decides, acts, counts; holds reordered and delayed datagrams.</li>
 * <li>{@code FaultInjectorBuilder}: an injector's seed, plans and rules, checked when it is built.</li>
 * <li>{@code FaultPlan}: the random faults of one direction: a probability per action and timing parameters.</li>
 * <li>{@code FaultRule}: a targeted fault ("drop the first ACK", "every remote access error NAK says invalid
 * request"): action, match (opcode, PSN, QP, AETH syndrome), which matches fire.</li>
 * <li>{@code FaultSpec}: the {@code --chaos} command-line grammar; {@code FaultRuleSpec}: its {@code rule=} items.</li>
 * <li>{@code FaultAction}: the one action taken per datagram.</li>
 * <li>{@code Direction}: inbound or outbound.</li>
 * <li>{@code Corruption}: where the flipped bit goes so the receiver's ICRC check rejects it.</li>
 * <li>{@code Rewrite}: bytes written into a copy of a packet, its ICRC updated so the receiver accepts it.</li>
 * </ul>
 */
package io.jroce.endpoint.fault;
