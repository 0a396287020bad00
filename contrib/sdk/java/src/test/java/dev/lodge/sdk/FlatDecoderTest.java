package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.junit.jupiter.api.Test;

/**
 * vectors.decode, the output path: the common messages are decoded
 * without msgpack-core, from heap and native buffers alike, to the same
 * map msgpack-core gives; anything else is left to msgpack-core.
 */
class FlatDecoderTest {
	private interface Body {
		void pack(MessageBufferPacker p) throws IOException;
	}

	private static byte[] msg(Body b) throws IOException {
		try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
			b.pack(p);
			return p.toByteArray();
		}
	}

	/** The message in a native buffer, between other bytes, as a frame's payload is. */
	private static ByteBuffer direct(byte[] m) {
		ByteBuffer b = ByteBuffer.allocateDirect(m.length + 6);
		b.put(new byte[] {9, 9, 9}).put(m).put(new byte[] {9, 9, 9});
		return b.position(3).limit(3 + m.length);
	}

	/** What msgpack-core alone makes of the message. */
	private static Map<String, Object> reference(byte[] m) {
		return Codec.unpackWithCore(m, 0, m.length);
	}

	private static void assertSameMap(Map<String, Object> want, Map<String, Object> got) {
		assertEquals(List.copyOf(want.keySet()), List.copyOf(got.keySet()));
		for (String k : want.keySet()) {
			if (want.get(k) instanceof byte[])
				assertArrayEquals((byte[]) want.get(k), (byte[]) got.get(k), k);
			else
				assertEquals(want.get(k), got.get(k), k);
		}
	}

	@Test
	void outputAndExitDecodedWithoutCore() throws IOException {
		byte[] data = new byte[65536];
		for (int i = 0; i < data.length; i++)
			data[i] = (byte) (i * 31);
		List<byte[]> common = List.of(
		    msg(p -> {
			    p.packMapHeader(3).packString("type").packString("stdout");
			    p.packString("data").packBinaryHeader(data.length).writePayload(data);
			    p.packString("offset").packLong(1L << 40);
		    }),
		    msg(p -> {
			    p.packMapHeader(3).packString("type").packString("stderr");
			    p.packString("data").packBinaryHeader(3).writePayload(new byte[] {0, (byte) 0xff, 10});
			    p.packString("offset").packLong(200);
		    }),
		    msg(p -> {
			    p.packMapHeader(3).packString("type").packString("exit");
			    p.packString("exitCode").packLong(-1);
			    p.packString("signal").packNil();
		    }),
		    msg(p -> {
			    p.packMapHeader(4).packString("type").packString("gap");
			    p.packString("from").packLong(Long.MAX_VALUE);
			    p.packString("to").packLong(Integer.MIN_VALUE);
			    p.packString("strict").packBoolean(true);
		    }),
		    msg(p -> p.packMapHeader(2).packString("type").packString("a-type-not-known-yet")
		        .packString("aKeyOfThirtyOneCharactersLong__").packString("x".repeat(40))));
		for (byte[] m : common) {
			Map<String, Object> want = reference(m);
			Map<String, Object> heap = FlatDecoder.decode(ByteBuffer.wrap(m));
			Map<String, Object> nat = FlatDecoder.decode(direct(m));
			assertNotNull(heap, HexFormat.of().formatHex(m, 0, Math.min(m.length, 40)));
			assertNotNull(nat);
			assertSameMap(want, heap);
			assertSameMap(want, nat);
			assertSameMap(want, Codec.unpack(direct(m)));
		}
	}

	@Test
	void otherMessagesLeftToCore() throws IOException {
		List<byte[]> others = List.of(
		    msg(p -> { // started: a nested map
			    p.packMapHeader(2).packString("type").packString("started");
			    p.packString("limits").packMapHeader(1).packString("maxMessageBytes").packLong(1 << 20);
		    }),
		    msg(p -> { // text beyond ASCII
			    p.packMapHeader(2).packString("type").packString("error");
			    p.packString("message").packString("caf\u00e9");
		    }),
		    msg(p -> { // a float
			    p.packMapHeader(2).packString("type").packString("x");
			    p.packString("v").packDouble(1.5);
		    }));
		for (byte[] m : others) {
			assertNull(FlatDecoder.decode(ByteBuffer.wrap(m)));
			assertSameMap(reference(m), Codec.unpack(direct(m)));
		}
		// errors are msgpack-core's: truncated, trailing bytes, beyond a long, no type
		byte[] out = msg(p -> {
			p.packMapHeader(2).packString("type").packString("stdout");
			p.packString("data").packBinaryHeader(4).writePayload(new byte[4]);
		});
		byte[] big = msg(p -> {
			p.packMapHeader(2).packString("type").packString("stdout");
			p.packString("offset").packBigInteger(java.math.BigInteger.ONE.shiftLeft(64).subtract(java.math.BigInteger.ONE));
		});
		byte[] untyped = msg(p -> p.packMapHeader(1).packString("data").packLong(1));
		for (byte[] bad : List.of(Arrays.copyOf(out, out.length - 1), Arrays.copyOf(out, out.length + 1), big, untyped)) {
			assertNull(FlatDecoder.decode(ByteBuffer.wrap(bad)));
			assertThrows(ConnectionLostException.class, () -> Codec.unpack(direct(bad)));
		}
	}
}
