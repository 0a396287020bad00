package dev.lodge.sdk;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * An incremental UTF-8 decoder for one stream: a character split across
 * chunks is held back until its last byte comes; invalid bytes become
 * U+FFFD.
 */
public final class Utf8Decoder {
	private final CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
	    .onMalformedInput(CodingErrorAction.REPLACE)
	    .onUnmappableCharacter(CodingErrorAction.REPLACE);
	private final byte[] held = new byte[4];
	private int nheld;

	/** A decoder with nothing held. */
	public Utf8Decoder() {
	}

	/** The text of {@code data} after what was held, holding back an incomplete character. */
	public String decode(byte[] data) {
		ByteBuffer in;
		if (nheld > 0) {
			in = ByteBuffer.allocate(nheld + data.length);
			in.put(held, 0, nheld).put(data).flip();
		} else {
			in = ByteBuffer.wrap(data);
		}
		CharBuffer out = CharBuffer.allocate(in.remaining() + 1);
		dec.decode(in, out, false);
		nheld = in.remaining();
		in.get(held, 0, nheld);
		return out.flip().toString();
	}

	/** What is still held, as text (U+FFFD for an incomplete character); resets. */
	public String finish() {
		ByteBuffer in = ByteBuffer.wrap(held, 0, nheld);
		CharBuffer out = CharBuffer.allocate(8);
		dec.decode(in, out, true);
		dec.flush(out);
		dec.reset();
		nheld = 0;
		return out.flip().toString();
	}
}
