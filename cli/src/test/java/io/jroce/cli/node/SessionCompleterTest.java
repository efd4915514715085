package io.jroce.cli.node;

import io.jroce.cli.node.SessionCompleter.Kind;
import io.jroce.cli.node.SessionCompleter.Suggestion;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.Syntax.Arg;
import io.jroce.cli.node.Syntax.Positional;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What Tab offers at the prompt, without a terminal: the completer is given the words of a line. */
class SessionCompleterTest {
    private static final Map<Kind, Collection<String>> NAMES = Map.of(
            Kind.REGION, List.of("buf", "rx", "big"),
            Kind.CQ, List.of("cq0", "scq"),
            Kind.QP, List.of("qp0", "q1"),
            Kind.REMOTE, List.of("theirs"));

    private final SessionCompleter completer = new SessionCompleter(NAMES::get);

    /** The suggestions for the end of {@code line}, as the cursor would stand there. */
    private List<Suggestion> at(String line) {
        List<String> words = new ArrayList<>(Arrays.asList(line.split(" ", -1)));
        return completer.complete(words, words.size() - 1, words.get(words.size() - 1));
    }

    private List<String> values(String line) {
        return at(line).stream().map(Suggestion::value).toList();
    }

    @Test
    void theFirstWordIsAVerbOfTheLanguage() {
        assertEquals(List.of("compare"), values("compa"));
        assertEquals(SessionLanguage.verbs(), values(""));
        assertEquals(List.of("compare", "cq", "connect", "cas", "counters", "chaos"), values("c"));
        assertTrue(at("compa").get(0).complete(), "a verb is followed by a blank");
        assertEquals(List.of(), values("frobnicate"));
    }

    @Test
    void aRegionIsExpectedAfterTheVerbsThatUseOne() {
        assertEquals(List.of("buf", "rx", "big"), values("fill "));
        assertEquals(List.of("buf", "big"), values("compare b"));
        assertEquals(List.of("buf", "rx", "big"), values("dump "));
        assertEquals(List.of("rx"), values("dereg r"));
        // a new name: nothing to offer
        assertEquals(List.of(), values("mr "));
        assertEquals(List.of(), values("cq "));
        assertEquals(List.of(), values("qp "));
    }

    @Test
    void afterTheNameComeTheArgumentNamesOfTheVerb() {
        List<Suggestion> mr = at("mr buf ");
        assertEquals(List.of("size=", "access="), mr.stream().map(Suggestion::value).toList());
        assertFalse(mr.get(0).complete(), "size= waits for its value, no blank after it");
        assertEquals(List.of("access="), values("mr buf size=4k "));
        assertEquals(List.of("access="), values("mr buf size=4k a"));
        assertEquals(List.of("text=", "hex=", "pattern=", "seed=", "file=", "u64=", "offset=", "len="), values("fill buf "));
        assertEquals(List.of("len="), values("fill buf pattern=seq offset=8 l"));
    }

    @Test
    void flagsAreOfferedBareAndOnce() {
        List<Suggestion> send = at("send ");
        assertTrue(send.contains(new Suggestion("solicited", "solicited", true)), send.toString());
        assertTrue(send.contains(new Suggestion("mr=", "mr=", false)), send.toString());
        assertFalse(values("send solicited ").contains("solicited"));
        assertFalse(values("send qp=qp0 ").contains("qp="));
        assertEquals(List.of("inline"), values("send solicited inl"));
    }

    @Test
    void namesOfTheSessionAfterTheKeysThatTakeThem() {
        assertEquals(List.of("mr=buf", "mr=rx", "mr=big"), values("write mr="));
        assertEquals(List.of("qp=qp0", "qp=q1"), values("write qp="));
        assertEquals(List.of("qp=q1"), values("query qp=q1"));
        assertEquals(List.of("cq=cq0", "cq=scq"), values("poll cq="));
        assertEquals(List.of("send_cq=scq"), values("qp a send_cq=s"));
        assertEquals(List.of("remote=theirs"), values("read mr=buf remote="));
        assertEquals(List.of("publish=buf,rx"), values("listen publish=buf,r"));
        Suggestion s = at("write mr=b").get(0);
        assertEquals("buf", s.display(), "the list shows the name alone");
        assertTrue(s.complete());
    }

    @Test
    void choicesOfATypeAfterItsKey() {
        assertEquals(List.of("pattern=seq"), values("fill buf pattern=s"));
        assertEquals(List.of("as=hex", "as=text", "as=u64", "as=sha256"), values("dump buf as="));
        assertEquals(List.of("status=SUCCESS"), values("expect status=SUCC"));
        assertEquals(List.of("state=RTR", "state=RTS"), values("modify state=RT"));
        assertEquals(List.of("access=local_write,remote_read"), values("mr m size=1 access=local_write,remote_r"));
        assertEquals(List.of("mtu=1024"), values("listen mtu=10"));
        assertEquals(List.of(), values("mr buf size="), "a size is typed, not chosen");
        assertEquals(List.of(), values("mr buf nosuch="));
    }

    @Test
    void wordsAfterHelpCountersAndFreeText() {
        assertEquals(List.of("compare", "connect", "counters"), values("help co"));
        assertEquals(ControlCommands.COUNTER_SETS, values("counters "));
        assertEquals(List.of(), values("echo "));
        assertEquals(List.of(), values("chaos "));
        assertEquals(List.of(), values("sleep "));
        assertEquals(List.of(), values("stats "));
    }

    @Test
    void everyNameTheLanguageTakesIsCompletedOrKnownToBeNew() {
        for (SessionCommand c : SessionLanguage.COMMANDS) {
            Syntax syntax = c.syntax();
            for (Arg a : syntax.args()) {
                if (a.type() == Type.NAME || a.type() == Type.NAMES || a.type() == Type.KEY_OR_REMOTE) {
                    assertTrue(SessionCompleter.NAME_ARGS.containsKey(a.key()), syntax.verb() + " " + a.key() + "= takes a name");
                }
            }
            if (syntax.positional() == Positional.NAME) {
                assertTrue(SessionCompleter.NAME_REFERS_TO_REGION.contains(c) != SessionCompleter.NAME_DEFINES.contains(c),
                        syntax.verb() + " NAME is either an existing region or a new name");
            }
        }
    }

    @Test
    void theSessionsNamesAreAReadOnlyLiveView() {
        Named<String> regions = new Named<>("memory region");
        Set<String> view = regions.names();
        regions.put("buf", "x");
        regions.put("rx", "y");
        assertEquals(List.of("buf", "rx"), List.copyOf(view));
        assertThrows(UnsupportedOperationException.class, () -> view.remove("buf"));
        regions.remove("buf");
        assertEquals(List.of("rx"), List.copyOf(view));
    }
}
