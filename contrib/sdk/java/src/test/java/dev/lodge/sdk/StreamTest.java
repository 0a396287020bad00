package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The stream.* scenarios of tests/sdk/SCENARIOS.md. */
class StreamTest {
	private final Sandbox sandbox = Kit.sandbox();

	/** Collected output, safe to read from the test's thread. */
	static final class Sink {
		final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

		synchronized void add(byte[] b) {
			bytes.write(b, 0, b.length);
		}

		synchronized String text() {
			return bytes.toString(StandardCharsets.UTF_8);
		}

		synchronized byte[] data() {
			return bytes.toByteArray();
		}
	}

	@Test
	void streamBasic() { // stream.basic
		Sink out = new Sink(), err = new Sink();
		List<long[]> offs = new ArrayList<>();
		AtomicBoolean inCallback = new AtomicBoolean();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("printf out; printf err >&2")
		    .setOnStdout(out::add).setOnStderr(b -> {
			    inCallback.set(true);
			    try {
				    Thread.sleep(200);
			    } catch (InterruptedException e) {
				    throw new AssertionError(e);
			    }
			    err.add(b);
			    inCallback.set(false);
		    })
		    .setOnOutput((s, off, d) -> offs.add(new long[] {off, d.length})));
		ExecExitInfo x = h.waitForExit();
		assertFalse(inCallback.get(), "wait settled before the last callback returned");
		assertEquals("out", out.text());
		assertEquals("err", err.text());
		assertEquals(0, x.code);
		assertNull(x.signal);
		long next = 0;
		for (long[] o : offs) {
			assertEquals(next, o[0]);
			next += o[1];
		}
		assertEquals(6, next);
	}

	@Test
	void streamExitCode() { // stream.exit_code
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("exit 5"));
		ExecExitInfo x = h.waitForExit();
		assertEquals(5, x.code);
		assertNull(x.signal);
		// an exited process has nothing to signal or resize; its input is gone
		h.signal("TERM");
		h.resize(10, 10);
		assertThrows(ConnectionLostException.class, () -> h.write("x"));
	}

	@Test
	void streamStdinEof() { // stream.stdin_eof
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setArgs(List.of("cat")).setOnStdout(out::add));
		h.write("hello\n");
		h.write(new byte[] {0, (byte) 0xff});
		h.end();
		assertEquals(0, h.waitForExit().code);
		assertArrayEquals("hello\n\0\u00ff".getBytes(StandardCharsets.ISO_8859_1), out.data());
	}

	@Test
	void streamPty() { // stream.pty
		Sink out = new Sink();
		AtomicBoolean stderr = new AtomicBoolean();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions()
		    .setCommand("test -t 0 && test -t 1 && echo \"tty $TERM\"; echo err >&2")
		    .setTty(true).setCols(120).setRows(40).setOnStdout(out::add).setOnStderr(b -> stderr.set(true)));
		assertEquals(0, h.waitForExit().code);
		assertTrue(out.text().contains("tty xterm-256color"), out.text());
		assertTrue(out.text().contains("err"));
		assertFalse(stderr.get());
	}

	@Test
	void streamResize() { // stream.resize
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("stty size; read x; stty size")
		    .setTty(true).setCols(120).setRows(40).setOnStdout(out::add));
		Kit.eventually(() -> out.text().contains("40 120"), "40 120");
		h.resize(100, 30);
		h.write("\n");
		assertEquals(0, h.waitForExit().code);
		assertTrue(out.text().indexOf("30 100") > out.text().indexOf("40 120"), out.text());
	}

	@Test
	void streamSignal() { // stream.signal
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("echo ready; exec sleep 60")
		    .setOnStdout(out::add));
		Kit.eventually(() -> out.text().contains("ready"), "ready");
		h.signal("TERM");
		ExecExitInfo x = h.waitForExit();
		assertNull(x.code);
		assertEquals("TERM", x.signal);
	}

	@Test
	void streamSignalGroup() { // stream.signal.group
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("sleep 60 & echo $!; wait")
		    .setOnStdout(out::add));
		Kit.eventually(() -> out.text().endsWith("\n"), "the pid");
		long pid = Long.parseLong(out.text().trim());
		h.signal("TERM");
		assertEquals("TERM", h.waitForExit().signal);
		Kit.eventually(() -> !Kit.alive(pid), "the background sleep ended");
	}

	@Test
	void streamSignalRtmin() { // stream.signal.rtmin
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setArgs(List.of("bash", "-c",
		    "trap 'echo got; exit 7' RTMIN+3; echo ready; while :; do sleep 0.1; done")).setOnStdout(out::add));
		Kit.eventually(() -> out.text().contains("ready"), "ready");
		h.signal("RTMIN+3");
		assertEquals(7, h.waitForExit().code);
		assertTrue(out.text().contains("got"));
	}

	@Test
	void streamTimeout() { // stream.timeout
		ExecExitInfo x = sandbox.execStream(new ExecStreamOptions().setCommand("sleep 30").setTimeoutSeconds(1))
		    .waitForExit();
		assertTrue(x.timedOut);
		assertEquals("TERM", x.signal);
	}

	@Test
	void streamSpawnFailed() { // stream.spawn_failed
		AtomicBoolean output = new AtomicBoolean();
		SpawnFailedException e = assertThrows(SpawnFailedException.class,
		    () -> sandbox.execStream(new ExecStreamOptions().setCommand("true").setWorkDir("/nonexistent")
		        .setOnStdout(b -> output.set(true)).setOnStderr(b -> output.set(true))));
		assertEquals("spawn_failed", e.code);
		assertFalse(e.daemonMessage.isEmpty());
		assertFalse(output.get());
	}

	@Test
	void streamKillOnDisconnect() { // stream.kill_on_disconnect
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("echo $$; exec sleep 600")
		    .setOnStdout(out::add));
		Kit.eventually(() -> out.text().endsWith("\n"), "the pid");
		long pid = Long.parseLong(out.text().trim());
		h.close();
		assertThrows(ConnectionLostException.class, h::waitForExit);
		Kit.eventually(() -> !Kit.alive(pid), "the process was killed");
	}

	@Test
	void streamInterrupted() throws Exception { // an interrupted wait ends promptly and closes the connection
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("echo $$; exec sleep 600")
		    .setOnStdout(out::add));
		Kit.eventually(() -> out.text().endsWith("\n"), "the pid");
		long pid = Long.parseLong(out.text().trim());
		AtomicReference<Throwable> thrown = new AtomicReference<>();
		AtomicBoolean flag = new AtomicBoolean();
		Thread t = new Thread(() -> {
			try {
				h.waitForExit();
			} catch (Throwable e) {
				thrown.set(e);
				flag.set(Thread.currentThread().isInterrupted());
			}
		});
		t.start();
		Thread.sleep(300);
		t.interrupt();
		t.join(10000);
		assertFalse(t.isAlive());
		assertInstanceOf(LodgeInterruptedException.class, thrown.get());
		assertTrue(flag.get(), "the interrupt flag is set again");
		Kit.eventually(() -> !Kit.alive(pid), "the process was killed");
		assertThrows(ConnectionLostException.class, h::waitForExit);
	}

	@Test
	void streamBigOutput() { // stream.big_output
		AtomicLong count = new AtomicLong();
		AtomicLong base = new AtomicLong(-1), peak = new AtomicLong();
		Runtime rt = Runtime.getRuntime();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setCommand("head -c 2147483648 /dev/zero")
		    .setOnStdout(b -> {
			    long n = count.addAndGet(b.length);
			    if (base.get() < 0)
				    base.set(rss());
			    if ((n & ((64 << 20) - 1)) < b.length)
				    peak.accumulateAndGet(rss(), Math::max);
		    }));
		assertEquals(0, h.waitForExit().code);
		assertEquals(2147483648L, count.get());
		assertTrue(peak.get() - base.get() < 256L << 20,
		    "RSS grew by " + (peak.get() - base.get()) + " (heap max " + rt.maxMemory() + ")");
	}

	static long rss() {
		try {
			for (String l : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status")))
				if (l.startsWith("VmRSS:"))
					return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
		} catch (java.io.IOException e) {
			throw new AssertionError(e);
		}
		throw new AssertionError("no VmRSS");
	}

	@Test
	void streamBigWrite() throws Exception { // stream.big_write
		byte[] data = new byte[64 << 20];
		for (int i = 0; i < data.length; i++)
			data[i] = (byte) (i % 251);
		String want = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
		Sink out = new Sink();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setArgs(List.of("sha256sum"))
		    .setOnStdout(out::add));
		h.write(data);
		h.end();
		assertEquals(0, h.waitForExit().code);
		assertTrue(out.text().startsWith(want + " "), out.text() + " vs " + want);
	}

	@Test
	void streamText() { // stream.text
		StringBuilder text = new StringBuilder();
		List<Integer> chunks = new CopyOnWriteArrayList<>();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions()
		    .setCommand("printf '\\342'; sleep 0.3; printf '\\202\\254\\n'")
		    .setOnStdout(b -> chunks.add(b.length)).setOnStdoutText(text::append));
		assertEquals(0, h.waitForExit().code);
		assertEquals("\u20ac\n", text.toString());
		assertTrue(chunks.size() >= 2, "the character came in one message: " + chunks);
	}

	@Test
	void streamBadMessage() { // stream.bad_message
		Sink out = new Sink();
		List<ApiException> errs = new CopyOnWriteArrayList<>();
		ExecStreamHandle h = sandbox.execStream(new ExecStreamOptions().setArgs(List.of("cat"))
		    .setOnStdout(out::add).setOnError(errs::add));
		h.signal("NOSUCHSIG");
		Kit.eventually(() -> !errs.isEmpty(), "the error");
		assertInstanceOf(BadRequestException.class, errs.get(0));
		assertEquals(1, h.errors().size());
		h.write("x");
		h.end();
		assertEquals(0, h.waitForExit().code);
		assertEquals("x", out.text());
	}
}
