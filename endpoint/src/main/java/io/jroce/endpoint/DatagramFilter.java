package io.jroce.endpoint;

import io.netty.channel.ChannelHandler;

/**
 * A Netty handler placed at the head of a device's pipeline, before the RoCE handler, that sees every
 * datagram in both directions: the place for fault injection and taps.
 */
public interface DatagramFilter extends ChannelHandler {
}
