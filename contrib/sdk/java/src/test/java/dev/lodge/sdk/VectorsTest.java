package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** vectors.encode and vectors.decode: the message vectors of tests/sdk/vectors/. */
class VectorsTest {
	private static final Path DIR = Path.of("../../../tests/sdk/vectors");

	private static List<Map<?, ?>> files() throws IOException {
		List<Map<?, ?>> l = new ArrayList<>();
		try (var s = Files.list(DIR)) {
			for (Path p : (Iterable<Path>) s.sorted()::iterator)
				if (p.toString().endsWith(".json"))
					l.add((Map<?, ?>) Json.parse(Files.readString(p)));
		}
		assertTrue(l.size() >= 10, "the vectors are there");
		return l;
	}

	/** A vector's JSON value as the decoder gives it: {"bin": hex} is byte[]. */
	private static Object value(Object v) {
		if (v instanceof Map) {
			Map<?, ?> m = (Map<?, ?>) v;
			if (m.size() == 1 && m.get("bin") instanceof String)
				return HexFormat.of().parseHex((String) m.get("bin"));
			Map<String, Object> out = new LinkedHashMap<>();
			for (Map.Entry<?, ?> e : m.entrySet())
				out.put((String) e.getKey(), value(e.getValue()));
			return out;
		}
		if (v instanceof List) {
			List<Object> out = new ArrayList<>();
			for (Object o : (List<?>) v)
				out.add(value(o));
			return out;
		}
		return v;
	}

	private static void assertSame(String where, Object want, Object got) {
		if (want instanceof byte[]) {
			assertArrayEquals((byte[]) want, (byte[]) got, where);
		} else if (want instanceof Map) {
			assertInstanceOf(Map.class, got, where);
			for (Map.Entry<?, ?> e : ((Map<?, ?>) want).entrySet()) {
				assertTrue(((Map<?, ?>) got).containsKey(e.getKey()), where + ": " + e.getKey());
				assertSame(where + "." + e.getKey(), e.getValue(), ((Map<?, ?>) got).get(e.getKey()));
			}
		} else if (want instanceof List) {
			List<?> w = (List<?>) want, g = (List<?>) got;
			assertEquals(w.size(), g.size(), where);
			for (int i = 0; i < w.size(); i++)
				assertSame(where + "[" + i + "]", w.get(i), g.get(i));
		} else {
			assertEquals(want, got, where);
		}
	}

	/** The SDK's own encoder for a client message. */
	@SuppressWarnings("unchecked")
	private static byte[] encode(Map<String, Object> m) {
		switch ((String) m.get("type")) {
		case "stdin": {
			byte[] d = (byte[]) m.get("data");
			return Codec.stdin(d, 0, d.length);
		}
		case "eof":
			return Codec.simple("eof");
		case "resize":
			return Codec.resize(((Long) m.get("cols")).intValue(), ((Long) m.get("rows")).intValue());
		case "signal": {
			Object s = m.get("signal");
			return s instanceof Long ? Codec.signal(((Long) s).intValue()) : Codec.signal(s);
		}
		case "start": {
			ExecStreamOptions o = new ExecStreamOptions();
			if (m.containsKey("command"))
				o.setCommand((String) m.get("command"));
			if (m.containsKey("args"))
				o.setArgs((List<String>) m.get("args"));
			if (m.containsKey("workDir"))
				o.setWorkDir((String) m.get("workDir"));
			if (m.containsKey("env"))
				o.setEnv((Map<String, String>) m.get("env"));
			if (m.containsKey("user"))
				o.setUser((String) m.get("user"));
			if (m.containsKey("timeoutSeconds"))
				o.setTimeoutSeconds(((Number) m.get("timeoutSeconds")).doubleValue());
			if (m.containsKey("tty"))
				o.setTty((Boolean) m.get("tty"));
			if (m.containsKey("cols"))
				o.setCols(((Long) m.get("cols")).intValue());
			if (m.containsKey("rows"))
				o.setRows(((Long) m.get("rows")).intValue());
			return Codec.pack(o.startMessage());
		}
		default:
			throw new AssertionError("no encoder for " + m.get("type"));
		}
	}

	@Test
	@SuppressWarnings("unchecked")
	void vectorsEncode() throws IOException { // vectors.encode
		int n = 0;
		for (Map<?, ?> f : files()) {
			if (!"client".equals(f.get("direction")))
				continue;
			for (Object o : (List<?>) f.get("vectors")) {
				Map<?, ?> v = (Map<?, ?>) o;
				if (!Boolean.TRUE.equals(v.get("canonical")))
					continue;
				byte[] got = encode((Map<String, Object>) value(v.get("message")));
				assertEquals(v.get("hex"), HexFormat.of().formatHex(got), f.get("type") + "/" + v.get("name"));
				n++;
			}
		}
		assertTrue(n >= 5, "encoded " + n);
	}

	@Test
	void vectorsDecode() throws IOException { // vectors.decode
		int n = 0;
		for (Map<?, ?> f : files()) {
			for (Object o : (List<?>) f.get("vectors")) {
				Map<?, ?> v = (Map<?, ?>) o;
				Map<String, Object> got = Codec.unpack(HexFormat.of().parseHex((String) v.get("hex")));
				assertSame(f.get("type") + "/" + v.get("name"), value(v.get("message")), got);
				n++;
			}
		}
		assertTrue(n >= 10, "decoded " + n);
	}

	@Test
	void utf8DecoderHoldsSplitCharacters() { // stream.text (the decoder alone)
		Utf8Decoder d = new Utf8Decoder();
		assertEquals("", d.decode(new byte[] {(byte) 0xe2}));
		assertEquals("", d.decode(new byte[] {(byte) 0x82}));
		assertEquals("\u20ac\n", d.decode(new byte[] {(byte) 0xac, '\n'}));
		assertEquals("a", d.decode(new byte[] {'a', (byte) 0xf0, (byte) 0x9f}));
		assertEquals("\ufffd", d.finish());
	}

	@Test
	void jsonRoundTrip() {
		Object v = Json.parse("{\"a\":[1,2.5,\"x\\n\\u00e9\",true,null],\"b\":{}}");
		assertEquals("{\"a\":[1,2.5,\"x\\n\u00e9\",true,null],\"b\":{}}", Json.write(v));
	}
}
