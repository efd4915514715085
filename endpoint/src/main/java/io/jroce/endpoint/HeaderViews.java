package io.jroce.endpoint;

import io.jroce.wire.AethView;
import io.jroce.wire.AtomicAckEthView;
import io.jroce.wire.AtomicEthView;
import io.jroce.wire.DethView;
import io.jroce.wire.IethView;
import io.jroce.wire.ImmDtView;
import io.jroce.wire.RethView;

/**
 * The extension-header flyweights the engines write packets through: one of each per device shard, used on its
 * loop only, so building a packet allocates no header object. The BTH is written by {@link PacketOut#startPacket}.
 */
final class HeaderViews {
    final RethView reth = new RethView();
    final AethView aeth = new AethView();
    final AtomicEthView atomicEth = new AtomicEthView();
    final AtomicAckEthView atomicAckEth = new AtomicAckEthView();
    final ImmDtView immDt = new ImmDtView();
    final IethView ieth = new IethView();
    final DethView deth = new DethView();
}
