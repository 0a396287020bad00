package dev.lodge.sdk;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON of the REST API: a small reader (objects keep their key order,
 * numbers are {@code Long} or {@code Double}) and a writer of maps, lists,
 * strings, numbers, booleans and null.
 */
final class Json {
	private final String s;
	private int i;

	private Json(String s) {
		this.s = s;
	}

	/** Parses one JSON value; a malformed text is an {@link IllegalArgumentException}. */
	static Object parse(String text) {
		Json j = new Json(text);
		j.ws();
		Object v = j.value();
		j.ws();
		if (j.i != j.s.length())
			throw new IllegalArgumentException("trailing data in JSON");
		return v;
	}

	private void ws() {
		while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0)
			i++;
	}

	private char peek() {
		if (i >= s.length())
			throw new IllegalArgumentException("truncated JSON");
		return s.charAt(i);
	}

	private void expect(String word) {
		if (!s.startsWith(word, i))
			throw new IllegalArgumentException("bad JSON at " + i);
		i += word.length();
	}

	private Object value() {
		char c = peek();
		switch (c) {
		case '{':
			return object();
		case '[':
			return array();
		case '"':
			return string();
		case 't':
			expect("true");
			return Boolean.TRUE;
		case 'f':
			expect("false");
			return Boolean.FALSE;
		case 'n':
			expect("null");
			return null;
		default:
			return number();
		}
	}

	private Map<String, Object> object() {
		Map<String, Object> m = new LinkedHashMap<>();
		i++;
		ws();
		if (peek() == '}') {
			i++;
			return m;
		}
		for (;;) {
			ws();
			if (peek() != '"')
				throw new IllegalArgumentException("bad JSON key at " + i);
			String k = string();
			ws();
			expect(":");
			ws();
			m.put(k, value());
			ws();
			if (peek() == ',') {
				i++;
				continue;
			}
			expect("}");
			return m;
		}
	}

	private List<Object> array() {
		List<Object> l = new ArrayList<>();
		i++;
		ws();
		if (peek() == ']') {
			i++;
			return l;
		}
		for (;;) {
			ws();
			l.add(value());
			ws();
			if (peek() == ',') {
				i++;
				continue;
			}
			expect("]");
			return l;
		}
	}

	private String string() {
		StringBuilder b = new StringBuilder();
		i++;
		for (;;) {
			char c = peek();
			i++;
			if (c == '"')
				return b.toString();
			if (c != '\\') {
				b.append(c);
				continue;
			}
			char e = peek();
			i++;
			switch (e) {
			case 'b': b.append('\b'); break;
			case 'f': b.append('\f'); break;
			case 'n': b.append('\n'); break;
			case 'r': b.append('\r'); break;
			case 't': b.append('\t'); break;
			case 'u':
				if (i + 4 > s.length())
					throw new IllegalArgumentException("truncated JSON");
				b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
				i += 4;
				break;
			default: b.append(e);
			}
		}
	}

	private Object number() {
		int st = i;
		while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0)
			i++;
		String n = s.substring(st, i);
		if (n.isEmpty())
			throw new IllegalArgumentException("bad JSON at " + st);
		if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0)
			return Long.parseLong(n);
		return Double.parseDouble(n);
	}

	/** Writes a value as JSON. */
	static String write(Object v) {
		StringBuilder b = new StringBuilder();
		write(b, v);
		return b.toString();
	}

	private static void write(StringBuilder b, Object v) {
		if (v == null) {
			b.append("null");
		} else if (v instanceof String) {
			quote(b, (String) v);
		} else if (v instanceof Boolean || v instanceof Long || v instanceof Integer) {
			b.append(v);
		} else if (v instanceof Number) {
			double d = ((Number) v).doubleValue();
			if (d == Math.rint(d) && Math.abs(d) < 1e15)
				b.append((long) d);
			else
				b.append(d);
		} else if (v instanceof Map) {
			b.append('{');
			boolean first = true;
			for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
				if (!first)
					b.append(',');
				first = false;
				quote(b, String.valueOf(e.getKey()));
				b.append(':');
				write(b, e.getValue());
			}
			b.append('}');
		} else if (v instanceof List) {
			b.append('[');
			boolean first = true;
			for (Object o : (List<?>) v) {
				if (!first)
					b.append(',');
				first = false;
				write(b, o);
			}
			b.append(']');
		} else {
			throw new IllegalArgumentException("no JSON for " + v.getClass());
		}
	}

	private static void quote(StringBuilder b, String s) {
		b.append('"');
		for (int k = 0; k < s.length(); k++) {
			char c = s.charAt(k);
			if (c == '"' || c == '\\')
				b.append('\\').append(c);
			else if (c == '\n')
				b.append("\\n");
			else if (c == '\r')
				b.append("\\r");
			else if (c == '\t')
				b.append("\\t");
			else if (c < 0x20)
				b.append(String.format("\\u%04x", (int) c));
			else
				b.append(c);
		}
		b.append('"');
	}
}
