package dev.lodge.sdk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * The WebSocket messages of lodge-protocol(7) in msgpack, encoded in the
 * canonical form of the conformance kit: keys in the map's order (type
 * first, then the protocol's order), integers in their smallest form, a
 * whole {@code timeoutSeconds} as an integer, {@code byte[]} as bin.
 */
final class Codec {
	/** What the daemon accepts in one client message unless it says otherwise. */
	static final int DEFAULT_MAX_MESSAGE_BYTES = 1 << 20;
	/** The most a stdin message adds to its data (map, keys, bin 32 header). */
	static final int STDIN_OVERHEAD = 64;

	private Codec() {
	}

	/** Packs a message: map, list, String, byte[], Long/Integer, Double, Boolean, null. */
	static byte[] pack(Map<String, ?> message) {
		try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
			packValue(p, message);
			return p.toByteArray();
		} catch (IOException e) {
			throw new IllegalStateException(e);
		}
	}

	private static void packValue(MessageBufferPacker p, Object v) throws IOException {
		if (v == null) {
			p.packNil();
		} else if (v instanceof String) {
			p.packString((String) v);
		} else if (v instanceof byte[]) {
			byte[] b = (byte[]) v;
			p.packBinaryHeader(b.length);
			p.writePayload(b);
		} else if (v instanceof ByteBuffer) {
			ByteBuffer b = ((ByteBuffer) v).duplicate();
			p.packBinaryHeader(b.remaining());
			p.writePayload(b.array(), b.arrayOffset() + b.position(), b.remaining());
		} else if (v instanceof Boolean) {
			p.packBoolean((Boolean) v);
		} else if (v instanceof Double || v instanceof Float) {
			double d = ((Number) v).doubleValue();
			if (d == Math.rint(d) && !Double.isInfinite(d) && Math.abs(d) < 9.0e15)
				p.packLong((long) d);
			else
				p.packDouble(d);
		} else if (v instanceof Number) {
			p.packLong(((Number) v).longValue());
		} else if (v instanceof Map) {
			Map<?, ?> m = (Map<?, ?>) v;
			p.packMapHeader(m.size());
			for (Map.Entry<?, ?> e : m.entrySet()) {
				p.packString(String.valueOf(e.getKey()));
				packValue(p, e.getValue());
			}
		} else if (v instanceof List) {
			List<?> l = (List<?>) v;
			p.packArrayHeader(l.size());
			for (Object o : l)
				packValue(p, o);
		} else {
			throw new IllegalArgumentException("no msgpack for " + v.getClass());
		}
	}

	/** A stdin message carrying {@code len} bytes of {@code data} from {@code off}. */
	static byte[] stdin(byte[] data, int off, int len) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("type", "stdin");
		m.put("data", ByteBuffer.wrap(data, off, len));
		return pack(m);
	}

	static byte[] simple(String type) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("type", type);
		return pack(m);
	}

	static byte[] resize(int cols, int rows) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("type", "resize");
		m.put("cols", cols);
		m.put("rows", rows);
		return pack(m);
	}

	static byte[] signal(Object sig) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("type", "signal");
		m.put("signal", sig);
		return pack(m);
	}

	/**
	 * Unpacks a server message: a map with a str {@code type}; bin is
	 * {@code byte[]}, integers {@code Long}, floats {@code Double}.
	 */
	static Map<String, Object> unpack(byte[] frame) {
		return unpack(frame, 0, frame.length);
	}

	static Map<String, Object> unpack(byte[] frame, int off, int len) {
		return unpack(ByteBuffer.wrap(frame, off, len));
	}

	/** Unpacks a message from a buffer (its bin values copied out). */
	static Map<String, Object> unpack(ByteBuffer frame) {
		Map<String, Object> m = FlatDecoder.decode(frame);
		if (m != null)
			return m;
		if (frame.hasArray())
			return unpackWithCore(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
		// msgpack-core reads native memory only with java.base opened to it
		byte[] a = new byte[frame.remaining()];
		frame.get(frame.position(), a);
		return unpackWithCore(a, 0, a.length);
	}

	/** Unpacks a message with msgpack-core alone. */
	static Map<String, Object> unpackWithCore(byte[] frame, int off, int len) {
		return unpack(MessagePack.newDefaultUnpacker(frame, off, len));
	}

	private static Map<String, Object> unpack(MessageUnpacker unpacker) {
		try (MessageUnpacker u = unpacker) {
			Object v = unpackValue(u);
			if (u.hasNext())
				throw new ConnectionLostException("the server sent trailing data in a message");
			if (!(v instanceof Map))
				throw new ConnectionLostException("the server sent a message that is not a map");
			@SuppressWarnings("unchecked")
			Map<String, Object> m = (Map<String, Object>) v;
			if (!(m.get("type") instanceof String))
				throw new ConnectionLostException("the server sent a message without type");
			return m;
		} catch (IOException | RuntimeException e) {
			if (e instanceof ConnectionLostException)
				throw (ConnectionLostException) e;
			throw new ConnectionLostException("the server sent bad msgpack: " + e, e);
		}
	}

	private static Object unpackValue(MessageUnpacker u) throws IOException {
		ValueType t = u.getNextFormat().getValueType();
		switch (t) {
		case NIL:
			u.unpackNil();
			return null;
		case BOOLEAN:
			return u.unpackBoolean();
		case INTEGER:
			return u.unpackLong();
		case FLOAT:
			return u.unpackDouble();
		case STRING:
			return u.unpackString();
		case BINARY:
			return u.readPayload(u.unpackBinaryHeader());
		case ARRAY: {
			int n = u.unpackArrayHeader();
			List<Object> l = new ArrayList<>(Math.min(n, 1024));
			for (int k = 0; k < n; k++)
				l.add(unpackValue(u));
			return l;
		}
		case MAP: {
			int n = u.unpackMapHeader();
			Map<String, Object> m = new LinkedHashMap<>();
			for (int k = 0; k < n; k++) {
				Object key = unpackValue(u);
				m.put(String.valueOf(key), unpackValue(u));
			}
			return m;
		}
		default:
			u.skipValue();
			return null;
		}
	}

	/** maxMessageBytes from an attached or started message's limits, or the default. */
	static int limit(Map<String, Object> msg) {
		Object lim = msg.get("limits");
		if (lim instanceof Map) {
			Object n = ((Map<?, ?>) lim).get("maxMessageBytes");
			if (n instanceof Long && (Long) n > STDIN_OVERHEAD)
				return (int) Math.min((Long) n, Integer.MAX_VALUE);
		}
		return DEFAULT_MAX_MESSAGE_BYTES;
	}

	/** A non-negative integer field, or a connection-lost error. */
	static long offset(Map<String, Object> msg, String key) {
		Object v = msg.get(key);
		if (!(v instanceof Long) || (Long) v < 0)
			throw new ConnectionLostException("the server sent a bad " + key);
		return (Long) v;
	}

	static Integer intOrNull(Object v) {
		return v instanceof Number ? Integer.valueOf(((Number) v).intValue()) : null;
	}

	static String strOrNull(Object v) {
		return v instanceof String ? (String) v : null;
	}
}
