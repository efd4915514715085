package io.jroce.endpoint;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.ThreadAwareExecutor;

import java.util.function.UnaryOperator;

/**
 * A loop's {@link IoHandler} that passes every call on to the handler it wraps; a subclass overrides what it
 * changes ({@link DirectReceive}: registration, {@link TimerWait}: the wait).
 */
abstract class ForwardingIoHandler implements IoHandler {
    final IoHandler inner;

    ForwardingIoHandler(IoHandler inner) {
        this.inner = inner;
    }

    /** A factory whose loops get {@code inner}'s handler, wrapped by {@code wrap}. */
    static IoHandlerFactory wrapping(IoHandlerFactory inner, UnaryOperator<IoHandler> wrap) {
        return new IoHandlerFactory() {
            @Override
            public IoHandler newHandler(ThreadAwareExecutor executor) {
                return wrap.apply(inner.newHandler(executor));
            }

            @Override
            public boolean isChangingThreadSupported() {
                return inner.isChangingThreadSupported();
            }
        };
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception { return inner.register(handle); }
    @Override
    public int run(IoHandlerContext context) { return inner.run(context); }
    @Override
    public void initialize() { inner.initialize(); }
    @Override
    public void prepareToDestroy() { inner.prepareToDestroy(); }
    @Override
    public void destroy() { inner.destroy(); }
    @Override
    public void wakeup() { inner.wakeup(); }
    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) { return inner.isCompatible(handleType); }
}
