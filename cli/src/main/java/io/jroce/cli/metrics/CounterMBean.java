package io.jroce.cli.metrics;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.ReflectionException;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A read-only MBean whose attributes are the entries of a counters map ({@code packets_in}, {@code drop_icrc},
 * {@code in.dropped}...: the names {@code --counters} prints), read when a JMX client asks. The attribute set
 * is taken from a fresh map each time, so it follows maps whose keys change (a fault injector's rules).
 */
final class CounterMBean implements DynamicMBean {
    private final String className;
    private final String description;
    private final Supplier<Map<String, Object>> read;

    /**
     * @param read a consistent snapshot of every attribute; values are {@code Long}, {@code Integer} or {@code String}
     */
    CounterMBean(String className, String description, Supplier<Map<String, Object>> read) {
        this.className = className;
        this.description = description;
        this.read = read;
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        Map<String, Object> now = read.get();
        if (!now.containsKey(attribute)) throw new AttributeNotFoundException(attribute);
        return now.get(attribute);
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        Map<String, Object> now = read.get(); // one snapshot for all of them
        AttributeList list = new AttributeList();
        for (String a : attributes) {
            if (now.containsKey(a)) list.add(new Attribute(a, now.get(a)));
        }
        return list;
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("read-only: " + attribute.getName());
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList(); // nothing is writable
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) throws ReflectionException {
        throw new ReflectionException(new NoSuchMethodException(actionName), "no operations");
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        Map<String, Object> now = read.get();
        MBeanAttributeInfo[] attrs = new MBeanAttributeInfo[now.size()];
        int i = 0;
        for (Map.Entry<String, Object> e : now.entrySet()) {
            String type = e.getValue() == null ? String.class.getName() : e.getValue().getClass().getName();
            attrs[i++] = new MBeanAttributeInfo(e.getKey(), type, e.getKey(), true, false, false);
        }
        return new MBeanInfo(className, description, attrs, null, new MBeanOperationInfo[0], null);
    }
}
