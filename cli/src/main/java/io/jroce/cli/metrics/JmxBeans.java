package io.jroce.cli.metrics;

import io.jroce.wire.IpText;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.fault.FaultInjector;

import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The device's counters as MBeans of the platform MBeanServer, for JConsole and VisualVM:
 * <ul>
 *   <li>{@code io.jroce:type=Device,address=A,port=P}: the device counters, its QP count;</li>
 *   <li>{@code io.jroce:type=QueuePair,device=A,port=P,qpn=0x000011}: one per QP, its state and counters;</li>
 *   <li>{@code io.jroce:type=FaultInjector,device=A,port=P}: when the device has one.</li>
 * </ul>
 * The port is in the names because two devices of one process may share an address (tests, demos). Device and
 * fault-injector MBeans live from {@link #register} to {@link #close}; QP MBeans follow the QPs each
 * {@link #sync} sees, so a destroyed QP's MBean goes at the next sync and none outlive {@link #close}.
 */
final class JmxBeans implements AutoCloseable {
    static final String DOMAIN = "io.jroce";

    private final MBeanServer server;
    private final Device device;
    private final Map<ObjectName, Object> fixed = new LinkedHashMap<>();
    private final Map<Integer, Registered> qps = new HashMap<>(); // by QPN; guarded by this
    private boolean closed; // guarded by this

    private record Registered(QueuePair qp, ObjectName name) {
    }

    JmxBeans(MBeanServer server, Device device) {
        this.server = server;
        this.device = device;
    }

    /** The device's address as an ObjectName value: IPv4 as is, IPv6 quoted (a ':' may not appear unquoted). */
    static String address(Device device) {
        String a = IpText.of(device.address());
        return a.indexOf(':') < 0 ? a : ObjectName.quote(a);
    }

    static ObjectName deviceName(Device device) {
        return name("type=Device,address=" + address(device) + ",port=" + device.port());
    }

    static ObjectName qpName(Device device, int qpn) {
        return name("type=QueuePair,device=" + address(device) + ",port=" + device.port()
                + ",qpn=" + DeviceSample.qpnLabel(qpn));
    }

    static ObjectName faultInjectorName(Device device) {
        return name("type=FaultInjector,device=" + address(device) + ",port=" + device.port());
    }

    /** Registers the device MBean and, if {@code chaos} is not null, the fault injector's. */
    synchronized void register(FaultInjector chaos) throws JMException {
        String description = "jroce device " + IpText.of(device.address()) + " port " + device.port();
        registerFixed(deviceName(device), new CounterMBean(Device.class.getName(), description, () -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("address", IpText.of(device.address()));
            m.put("port", device.port());
            device.runOnLoop(() -> { // one hop: count and counters of the same moment
                m.put("queue_pairs", device.qpCount());
                m.putAll(device.counters().asMap());
            });
            return m;
        }));
        if (chaos != null) {
            String about = "fault injector " + chaos.spec();
            registerFixed(faultInjectorName(device), new CounterMBean(FaultInjector.class.getName(), about, () -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("spec", chaos.spec());
                m.put("pending", chaos.pending());
                m.putAll(chaos.counters());
                return m;
            }));
        }
    }

    private void registerFixed(ObjectName name, Object bean) throws JMException {
        server.registerMBean(bean, name);
        fixed.put(name, bean);
    }

    /** Brings the QP MBeans in line with the QPs of {@code sample}: new QPs registered, gone ones removed. */
    synchronized void sync(DeviceSample sample) {
        if (closed) return;
        Map<Integer, QueuePair> now = new HashMap<>();
        for (DeviceSample.Qp q : sample.qps()) now.put(q.qpn(), q.qp());
        for (Iterator<Map.Entry<Integer, Registered>> it = qps.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Integer, Registered> e = it.next();
            if (now.get(e.getKey()) != e.getValue().qp()) { // destroyed, or its QPN handed to a new QP
                unregister(e.getValue().name());
                it.remove();
            }
        }
        for (Map.Entry<Integer, QueuePair> e : now.entrySet()) {
            if (qps.containsKey(e.getKey())) continue;
            QueuePair qp = e.getValue();
            ObjectName name = qpName(device, e.getKey());
            try {
                server.registerMBean(qpBean(qp), name);
                qps.put(e.getKey(), new Registered(qp, name));
            } catch (JMException ex) {
                // another exporter in this process owns the name: leave it to that one
            }
        }
    }

    private static CounterMBean qpBean(QueuePair qp) {
        return new CounterMBean(QueuePair.class.getName(), "jroce " + qp, () -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("qpn", qp.qpNum());
            m.put("state", qp.state().name());
            m.putAll(qp.counters().asMap());
            return m;
        });
    }

    /** The QP MBeans registered now (tests). */
    synchronized int qpCount() {
        return qps.size();
    }

    /** Unregisters every MBean this registered; later syncs register nothing. */
    @Override
    public synchronized void close() {
        closed = true;
        for (Registered r : qps.values()) unregister(r.name());
        qps.clear();
        for (ObjectName n : fixed.keySet()) unregister(n);
        fixed.clear();
    }

    private void unregister(ObjectName name) {
        try {
            server.unregisterMBean(name);
        } catch (InstanceNotFoundException e) {
            // already gone: the goal is reached
        } catch (JMException e) {
            throw new IllegalStateException("cannot unregister " + name + ": " + e.getMessage(), e);
        }
    }

    private static ObjectName name(String keys) {
        try {
            return new ObjectName(DOMAIN + ":" + keys);
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }
}
