package io.jroce.cli.conform;

import java.util.ArrayList;
import java.util.List;

/**
 * Every case, in the order they run: requests after which the QP must still work, then the packets the peer must
 * drop, then the connection manager's cases that leave the connection up, then the RNR case (after it the peer has
 * no receive posted), then the cases that may leave the QP in the error state ({@link Case#fatal}), and last the
 * DREQs that end the connection ({@link Case#releases}).
 */
final class Catalogue {
    private Catalogue() {
    }

    static List<Case> all() {
        List<Case> rc = new ArrayList<>(RcCases.all());
        Case rnr = rc.stream().filter(c -> c.id().equals("rnr.no-receive")).findFirst().orElseThrow();
        rc.remove(rnr);
        List<Case> out = new ArrayList<>(rc);
        out.addAll(WireCases.all());
        out.addAll(CmCases.all());
        out.add(rnr);
        out.addAll(ErrorCases.all());
        out.addAll(CmCases.releases());
        return out;
    }
}
