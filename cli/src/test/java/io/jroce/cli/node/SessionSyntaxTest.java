package io.jroce.cli.node;

import io.jroce.cli.node.SessionSyntax.Literal;
import io.jroce.cli.node.SessionSyntax.Ref;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lexical layer: words, named arguments, quotes, escapes, comments, references and their columns. */
class SessionSyntaxTest {

    @Test
    void aLineIsAVerbThenWordsAndNamedArguments() throws Exception {
        Statement s = SessionSyntax.parseLine("  send qp=q mr=buf len=4k solicited   # the first SEND", 7);
        assertEquals(7, s.line());
        assertEquals("send", s.verb());
        assertEquals(3, s.verbColumn());
        assertEquals(List.of("qp", "mr", "len"), List.copyOf(s.named().keySet()));
        assertEquals("4k", s.arg("len").literal());
        assertEquals(13, s.arg("mr").column());
        assertEquals(16, s.arg("mr").valueColumn());
        assertEquals(1, s.positional().size());
        assertEquals("solicited", s.positional().get(0).literal());
    }

    @Test
    void blankAndCommentLinesAreNotStatements() throws Exception {
        assertNull(SessionSyntax.parseLine("", 1));
        assertNull(SessionSyntax.parseLine("   \t ", 1));
        assertNull(SessionSyntax.parseLine("# only a comment", 1));
        List<Statement> script = SessionSyntax.parseScript("# head\n\nmr a size=8\n  # indented comment\ndump a\n");
        assertEquals(2, script.size());
        assertEquals(3, script.get(0).line());
        assertEquals(5, script.get(1).line());
    }

    @Test
    void aHashStartsACommentOnlyAtTheBeginningOfAWord() throws Exception {
        Statement s = SessionSyntax.parseLine("fill b text=a#b text2=\"x # y\" #c", 1);
        assertEquals("a#b", s.arg("text").literal());
        assertEquals("x # y", s.arg("text2").literal());
        assertEquals(List.of("b"), s.positional().stream().map(Token::literal).toList());
    }

    @Test
    void doubleQuotesKeepBlanksAndUnderstandEscapes() throws Exception {
        Statement s = SessionSyntax.parseLine("fill b text=\"a b\\tc\\x41\\\"\\\\\\n\\$x\"", 1);
        Token t = s.arg("text");
        assertTrue(t.quoted());
        assertFalse(t.hasRefs());
        assertEquals("a b\tcA\"\\\n$x", t.literal());
    }

    @Test
    void singleQuotesAreLiteral() throws Exception {
        Statement s = SessionSyntax.parseLine("echo 'a $b.rkey \\n'", 1);
        assertEquals("a $b.rkey \\n", s.positional().get(0).literal());
        assertFalse(s.positional().get(0).hasRefs());
    }

    @Test
    void referencesAreKeptForRunTimeWithTheirColumns() throws Exception {
        Statement s = SessionSyntax.parseLine("echo key=$buf.rkey! ${q.qpn}x", 1);
        Token key = s.arg("key");
        assertEquals(List.of(new Ref("buf", "rkey", 10), new Literal("!")), key.parts());
        Token second = s.positional().get(0);
        assertEquals(List.of(new Ref("q", "qpn", 21), new Literal("x")), second.parts());
        assertTrue(second.hasRefs());
    }

    @Test
    void aDollarWithoutANameIsJustADollar() throws Exception {
        Statement s = SessionSyntax.parseLine("echo 5$ $", 1);
        assertEquals("5$", s.positional().get(0).literal());
        assertEquals("$", s.positional().get(1).literal());
    }

    @Test
    void errorsNameTheColumn() {
        ScriptException unterminated = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("fill b text=\"abc", 4));
        assertEquals(4, unterminated.line);
        assertEquals(13, unterminated.column);
        assertTrue(unterminated.getMessage().contains("unterminated \" quote"), unterminated.getMessage());

        ScriptException single = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("echo 'x", 1));
        assertEquals(6, single.column);

        ScriptException escape = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("echo \"a\\qb\"", 2));
        assertEquals(8, escape.column);
        assertTrue(escape.getMessage().contains("unknown escape \\q"), escape.getMessage());

        ScriptException hex = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("echo \"\\xZ1\"", 1));
        assertTrue(hex.getMessage().contains("two hex digits"), hex.getMessage());

        ScriptException ref = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("echo $buf", 1));
        assertEquals(6, ref.column);
        assertTrue(ref.getMessage().contains("$object.field"), ref.getMessage());

        ScriptException twice = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("mr b size=8 size=9", 3));
        assertEquals(13, twice.column);
        assertTrue(twice.getMessage().contains("'size' is given twice"), twice.getMessage());

        ScriptException verb = assertThrows(ScriptException.class, () -> SessionSyntax.parseLine("size=8 mr", 1));
        assertEquals(1, verb.column);
    }

    @Test
    void scriptExceptionsFormatAsFileLineColumn() {
        assertEquals("x.jroce:3:7: boom", new ScriptException(3, 7, "boom").format("x.jroce"));
        assertEquals("x.jroce:3: boom", new ScriptException(3, 0, "boom").format("x.jroce"));
    }

    @Test
    void windowsLineEndingsCountLikeOthers() throws Exception {
        List<Statement> script = SessionSyntax.parseScript("mr a size=8\r\n\r\ndump a\r\n");
        assertEquals(List.of(1, 3), script.stream().map(Statement::line).toList());
        assertEquals("a", script.get(1).positional().get(0).literal());
    }
}
