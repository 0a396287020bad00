package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A resume refused with 503 (the daemon's worker busy, or a limit
 * reached for a moment) is tried again, as any other failed reconnect:
 * a one-session fake daemon drops the first connection, refuses the
 * second with 503 and serves the third, which must bring the rest.
 */
class BusyResumeTest {
	private static final String GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

	private static Map<String, Object> msg(Object... kv) {
		Map<String, Object> m = new LinkedHashMap<>();
		for (int i = 0; i < kv.length; i += 2)
			m.put((String) kv[i], kv[i + 1]);
		return m;
	}

	private static void frame(OutputStream o, int opcode, byte[] p) throws IOException {
		o.write(0x80 | opcode);
		if (p.length < 126) {
			o.write(p.length);
		} else {
			o.write(126);
			o.write(p.length >> 8);
			o.write(p.length & 0xff);
		}
		o.write(p);
	}

	/** Reads the request head. */
	private static String head(InputStream in) throws IOException {
		ByteArrayOutputStream b = new ByteArrayOutputStream();
		while (!b.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
			int c = in.read();
			if (c < 0)
				throw new IOException("no request");
			b.write(c);
		}
		return b.toString(StandardCharsets.US_ASCII);
	}

	private static void upgrade(OutputStream o, String head) throws Exception {
		String key = "";
		for (String line : head.split("\r\n"))
			if (line.toLowerCase(java.util.Locale.ROOT).startsWith("sec-websocket-key:"))
				key = line.substring(line.indexOf(':') + 1).trim();
		byte[] sha = MessageDigest.getInstance("SHA-1").digest((key + GUID).getBytes(StandardCharsets.US_ASCII));
		o.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		    + "Sec-WebSocket-Accept: " + Base64.getEncoder().encodeToString(sha) + "\r\n\r\n")
		    .getBytes(StandardCharsets.US_ASCII));
	}

	private static void serve(ServerSocket ls, AtomicInteger n) {
		try {
			while (true) {
				try (Socket s = ls.accept()) {
					InputStream in = s.getInputStream();
					OutputStream o = s.getOutputStream();
					String req = head(in);
					java.util.regex.Matcher since = java.util.regex.Pattern.compile("since=(\\d+)").matcher(req.split("\r\n")[0]);
					int from = since.find() ? Integer.parseInt(since.group(1)) : 0;
					switch (n.incrementAndGet()) {
					case 1:
						upgrade(o, req);
						frame(o, 2, Codec.pack(msg("type", "attached", "replayFrom", 0L, "replayTo", 0L)));
						frame(o, 2, Codec.pack(msg("type", "live")));
						frame(o, 2, Codec.pack(msg("type", "stdout", "offset", 0L,
						    "data", "a".getBytes(StandardCharsets.UTF_8))));
						o.flush();
						break; // dropped without a close: the client resumes
					case 2:
						byte[] body = "{\"error\":{\"code\":\"unavailable\",\"message\":\"busy\"}}"
						    .getBytes(StandardCharsets.UTF_8);
						o.write(("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
						    + "Content-Length: " + body.length + "\r\nConnection: close\r\n\r\n")
						    .getBytes(StandardCharsets.US_ASCII));
						o.write(body);
						o.flush();
						break;
					default:
						upgrade(o, req);
						// the ring holds "ab": the replay from since, then the exit
						frame(o, 2, Codec.pack(msg("type", "attached", "replayFrom", (long) from,
						    "replayTo", 2L)));
						if (from < 2)
							frame(o, 2, Codec.pack(msg("type", "stdout", "offset", (long) from,
							    "data", "ab".substring(from).getBytes(StandardCharsets.UTF_8))));
						frame(o, 2, Codec.pack(msg("type", "live")));
						frame(o, 2, Codec.pack(msg("type", "exit", "exitCode", 0L)));
						frame(o, 8, new byte[] {0x03, (byte) 0xe8});
						o.flush();
						in.readNBytes(8); // the client's close
						break;
					}
				}
			}
		} catch (Exception e) {
			// the listener closed: the test is over
		}
	}

	@Test
	void resumeRefusedWithUnavailableIsRetried() throws Exception {
		try (ServerSocket ls = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
			AtomicInteger n = new AtomicInteger();
			Thread t = new Thread(() -> serve(ls, n), "fake-lodged");
			t.setDaemon(true);
			t.start();
			Sandbox sb = Sandbox.connect("http://127.0.0.1:" + ls.getLocalPort(), "token");
			StringBuilder out = new StringBuilder();
			SessionAttachHandle h = sb.attachSession("s", new SessionAttachOptions()
			    .setOnStdout(b -> out.append(new String(b, StandardCharsets.UTF_8))));
			assertEquals(0, h.waitForExit(java.time.Duration.ofSeconds(20)).code);
			assertEquals("ab", out.toString());
			assertEquals(3, n.get());
			assertEquals(2, h.reconnects());
		}
	}
}
