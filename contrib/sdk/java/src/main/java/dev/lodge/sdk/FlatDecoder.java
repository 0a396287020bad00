package dev.lodge.sdk;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The common server messages (output, exit, live, gap: a map of str keys to
 * nil, bool, integers, ASCII str and bin) decoded straight from the frame's
 * buffer, the bin copied once into its {@code byte[]}: no unpacker, string
 * decoder or buffer allocated per message. Anything else (nested maps,
 * floats, non-ASCII text, an unsigned integer above {@code Long.MAX_VALUE},
 * a truncated or longer message) is left to msgpack-core, so both decode a
 * message the same way.
 */
final class FlatDecoder {
	/** The keys and type names of the protocol, shared instead of allocated per message. */
	private static final String[] KNOWN = {
		"type", "data", "offset", "stdout", "stderr", "exit", "exitCode",
		"signal", "live", "gap", "from", "to", "error", "code", "message",
	};

	/** Thrown inside to hand the message to msgpack-core. */
	private static final class Fallback extends RuntimeException {
		private static final long serialVersionUID = 1L;

		Fallback() {
			super(null, null, false, false);
		}
	}

	private static final Fallback FALLBACK = new Fallback();

	private final ByteBuffer b;
	private int pos;
	private final int end;

	private FlatDecoder(ByteBuffer b) {
		this.b = b;
		this.pos = b.position();
		this.end = b.limit();
	}

	/** The message, or null when msgpack-core must decode it. */
	static Map<String, Object> decode(ByteBuffer frame) {
		try {
			return new FlatDecoder(frame).message();
		} catch (Fallback e) {
			return null; // msgpack-core decodes it or names the error
		}
	}

	private int u8() {
		if (pos >= end)
			throw FALLBACK;
		return b.get(pos++) & 0xff;
	}

	private int u16() {
		return u8() << 8 | u8();
	}

	private long u32() {
		return (long) u16() << 16 | u16();
	}

	private Map<String, Object> message() {
		int h = u8();
		long n;
		if ((h & 0xf0) == 0x80)
			n = h & 0x0f;
		else if (h == 0xde)
			n = u16();
		else
			throw FALLBACK;
		Map<String, Object> m = new LinkedHashMap<>();
		for (long k = 0; k < n; k++) {
			int kh = u8();
			if ((kh & 0xe0) != 0xa0)
				throw FALLBACK;
			String key = text(kh & 0x1f);
			int vh = u8();
			Object v;
			if (vh <= 0x7f) {
				v = (long) vh;
			} else if (vh >= 0xe0) {
				v = (long) (byte) vh;
			} else if ((vh & 0xe0) == 0xa0) {
				v = text(vh & 0x1f);
			} else {
				switch (vh) {
				case 0xc0: v = null; break;
				case 0xc2: v = Boolean.FALSE; break;
				case 0xc3: v = Boolean.TRUE; break;
				case 0xc4: v = bin(u8()); break;
				case 0xc5: v = bin(u16()); break;
				case 0xc6: v = bin(u32()); break;
				case 0xcc: v = (long) u8(); break;
				case 0xcd: v = (long) u16(); break;
				case 0xce: v = u32(); break;
				case 0xcf: {
					long x = u32() << 32 | u32();
					if (x < 0)
						throw FALLBACK; // beyond a long: msgpack-core's error
					v = x;
					break;
				}
				case 0xd0: v = (long) (byte) u8(); break;
				case 0xd1: v = (long) (short) u16(); break;
				case 0xd2: v = (long) (int) u32(); break;
				case 0xd3: v = u32() << 32 | u32(); break;
				case 0xd9: v = text(u8()); break;
				default: throw FALLBACK;
				}
			}
			m.put(key, v);
		}
		if (pos != end || !(m.get("type") instanceof String))
			throw FALLBACK;
		return m;
	}

	/** An ASCII str of {@code len} bytes, a known one shared. */
	private String text(int len) {
		if (len > end - pos)
			throw FALLBACK;
		for (int i = 0; i < len; i++)
			if (b.get(pos + i) < 0)
				throw FALLBACK;
		for (String s : KNOWN) {
			if (s.length() != len)
				continue;
			int i = 0;
			while (i < len && b.get(pos + i) == s.charAt(i))
				i++;
			if (i == len) {
				pos += len;
				return s;
			}
		}
		byte[] a = new byte[len];
		b.get(pos, a);
		pos += len;
		return new String(a, StandardCharsets.US_ASCII);
	}

	private byte[] bin(long len) {
		if (len > end - pos)
			throw FALLBACK;
		byte[] a = new byte[(int) len];
		b.get(pos, a);
		pos += (int) len;
		return a;
	}
}
