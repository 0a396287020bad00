package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The attach.* and fault scenarios of tests/sdk/SCENARIOS.md. */
class AttachTest {
	private final Sandbox sandbox = Kit.sandbox();

	@AfterEach
	void cleanup() {
		Kit.calm();
		Kit.cleanup();
	}

	/** What an attach delivered: chunks with offsets, gaps, live, in order. */
	static final class Record {
		final List<Object[]> events = new CopyOnWriteArrayList<>();
		final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

		SessionAttachOptions options() {
			return new SessionAttachOptions()
			    .setOnOutput((s, off, d) -> {
				    events.add(new Object[] {"out", off, d.length});
				    synchronized (this) {
					    bytes.write(d, 0, d.length);
				    }
			    })
			    .setOnGap((f, t) -> events.add(new Object[] {"gap", f, t}))
			    .setOnLive(() -> events.add(new Object[] {"live", 0L, 0}));
		}

		synchronized String text() {
			return bytes.toString(StandardCharsets.UTF_8);
		}

		synchronized long size() {
			return bytes.size();
		}

		/** Checks offsets: contiguous, except after a gap. */
		long checkContiguous(long start) {
			long next = start, lost = 0;
			boolean afterGap = false;
			for (Object[] e : events) {
				if (e[0].equals("gap")) {
					assertEquals(next, (long) e[1], "a gap starts where output stopped");
					assertTrue((long) e[1] < (long) e[2]);
					lost += (long) e[2] - (long) e[1];
					next = (long) e[2];
					afterGap = true;
				} else if (e[0].equals("out")) {
					long off = (long) e[1];
					if (afterGap)
						assertTrue(off >= next);
					else
						assertEquals(next, off, "contiguous offsets");
					next = off + (int) e[2];
					afterGap = false;
				}
			}
			return lost;
		}
	}

	private static String seq(int from, int to) {
		StringBuilder b = new StringBuilder();
		for (int i = from; i <= to; i++)
			b.append(i).append('\n');
		return b.toString();
	}

	/** Equal texts, or where they first differ. */
	static void assertText(String want, String got) {
		if (want.equals(got))
			return;
		int i = 0;
		while (i < want.length() && i < got.length() && want.charAt(i) == got.charAt(i))
			i++;
		fail("lengths " + want.length() + " and " + got.length() + ", first difference at " + i + ": "
		    + want.substring(i, Math.min(want.length(), i + 40)).replace('\n', ' ') + " / "
		    + got.substring(i, Math.min(got.length(), i + 40)).replace('\n', ' '));
	}

	@Test
	void attachReplay() { // attach.replay
		String n = Kit.name("replay");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("echo one; read line; echo \"got $line\""));
		Kit.eventually(() -> new String(sandbox.sessionLog(n), StandardCharsets.UTF_8).equals("one\n"), "one");
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options());
		h.live().join();
		assertEquals(4, h.replayTo());
		h.write("x\n");
		assertEquals(0, h.waitForExit().code);
		assertEquals("one\ngot x\n", r.text());
		assertEquals("out", r.events.get(0)[0]);
		assertEquals(0L, r.events.get(0)[1]);
		assertEquals("live", r.events.get(1)[0]);
		assertEquals(4L, r.events.get(2)[1]);
	}

	@Test
	void attachReplaySince() { // attach.replay.since
		String n = Kit.name("since");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("printf abcdef"));
		Kit.exited(sandbox, n);
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options().setSince(2));
		assertEquals(0, h.waitForExit().code);
		assertEquals("cdef", r.text());
		assertEquals(2L, r.events.get(0)[1]);
		assertEquals("live", r.events.get(r.events.size() - 1)[0]);
	}

	@Test
	void attachExited() { // attach.exited
		String n = Kit.name("exited");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("echo done; exit 2"));
		Kit.exited(sandbox, n);
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options());
		assertEquals(2, h.waitForExit().code);
		assertEquals("done\n", r.text());
		assertTrue(h.live().isDone());
		assertEquals(2, h.waitForExit().code);
	}

	@Test
	void attachClients() { // attach.clients
		String n = Kit.name("clients");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		Record ra = new Record(), rb = new Record();
		SessionAttachHandle a = sandbox.attachSession(n, ra.options());
		SessionAttachHandle b = sandbox.attachSession(n, rb.options());
		a.live().join();
		b.live().join();
		a.write("hi\n");
		Kit.eventually(() -> ra.text().equals("hi\n") && rb.text().equals("hi\n"), "both see hi");
		assertEquals(ra.events.get(ra.events.size() - 1)[1], rb.events.get(rb.events.size() - 1)[1]);
		assertEquals(2, sandbox.getSession(n).clients);
		a.detach();
		assertThrows(DetachedException.class, a::waitForExit);
		Kit.eventually(() -> sandbox.getSession(n).clients == 1, "one client");
		b.write("b\n");
		Kit.eventually(() -> rb.text().equals("hi\nb\n"), "b sees its own write");
	}

	@Test
	void attachDetach() { // attach.detach
		String n = Kit.name("detach");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		SessionAttachHandle h = sandbox.attachSession(n);
		h.detach();
		assertThrows(DetachedException.class, h::waitForExit);
		assertEquals("running", sandbox.getSession(n).state);
	}

	@Test
	void attachPty() { // attach.pty
		String n = Kit.name("pty");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("bash --norc").setPty(true)
		    .setCols(120).setRows(40));
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options().setCols(120).setRows(40));
		h.write("echo hello\n");
		Kit.eventually(() -> r.text().contains("hello\r\n"), "hello");
		h.write("exit\n");
		assertEquals(0, h.waitForExit().code);
	}

	@Test
	void attachReadonly() { // attach.readonly, error.forbidden
		String n = Kit.name("ro");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		List<ApiException> errs = new CopyOnWriteArrayList<>();
		SessionAttachHandle h = sandbox.attachSession(n, new SessionAttachOptions().setReadOnly(true)
		    .setOnError(errs::add));
		h.write("x");
		h.resize(100, 30);
		h.signal("INT");
		Kit.eventually(() -> errs.size() == 3, "three refusals");
		for (ApiException e : errs) {
			assertInstanceOf(ForbiddenException.class, e);
			assertEquals("forbidden", e.code);
		}
		assertFalse(h.exitFuture().isDone());
		assertEquals(0, sandbox.sessionLog(n).length);
		assertEquals("running", sandbox.getSession(n).state);
		h.detach();
	}

	@Test
	void attachPace() throws Exception { // attach.pace
		int size = 32 << 20;
		String n = Kit.name("pace");
		sandbox.createSession(new CreateSessionOptions().setName(n)
		    .setArgs(List.of("sh", "-c", "read x; head -c " + size + " /dev/zero")));
		AtomicLong got = new AtomicLong();
		List<Long> gaps = new CopyOnWriteArrayList<>();
		AtomicBoolean slow = new AtomicBoolean(true);
		// the callback holds each chunk: the next message is read only once it returned
		SessionAttachHandle h = sandbox.attachSession(n, new SessionAttachOptions().setPace(true)
		    .setOnGap((f, t) -> gaps.add(t - f))
		    .setOnStdout(d -> {
			    got.addAndGet(d.length);
			    if (slow.get()) {
				    try {
					    Thread.sleep(20);
				    } catch (InterruptedException e) {
					    Thread.currentThread().interrupt();
				    }
			    }
		    }));
		h.live().join();
		h.write("go\n");
		Thread.sleep(1500);
		// what lodged read beyond what this reader took: a quarter of the
		// ring, a read, and the sockets' buffers, not the whole 32 MiB
		long taken = got.get();
		long ahead = sandbox.getSession(n).outputBytes - taken;
		assertTrue(ahead < 12 << 20, "the process ran " + ahead + " bytes ahead");
		slow.set(false);
		assertEquals(0, h.waitForExit().code);
		assertEquals(List.of(), gaps);
		assertEquals(size, got.get());
	}

	@Test
	void attachPaceReadonly() { // attach.pace.readonly
		String n = Kit.name("pace-ro");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		BadRequestException e = assertThrows(BadRequestException.class,
		    () -> sandbox.attachSession(n, new SessionAttachOptions().setPace(true).setReadOnly(true)));
		assertEquals("bad_request", e.code);
		assertTrue(e.daemonMessage.contains("'pace'"), e.daemonMessage);
		assertEquals("running", sandbox.getSession(n).state);
	}

	@Test
	void attachEof() { // attach.eof
		String n = Kit.name("eof");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options());
		h.write("z\n");
		h.end();
		assertEquals(0, h.waitForExit().code);
		assertEquals("z\n", r.text());
	}

	@Test
	void attachBigDirect() { // attach.replay at volume: no faults, every byte once in order
		String n = Kit.name("bigdirect");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("sleep 1; seq 1 1000000")
		    .setBufferSize(8 << 20));
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options());
		assertEquals(0, h.waitForExit().code);
		assertEquals(0, r.checkContiguous(0));
		assertText(seq(1, 1000000), r.text());
		assertEquals(0, h.reconnects());
	}

	@Test
	void attachResume() throws Exception { // attach.resume
		String n = Kit.name("resume");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("sleep 1; seq 1 1000000")
		    .setBufferSize(8 << 20));
		Sandbox p = Kit.proxied();
		Kit.control("cut-after 1000000");
		Record r = new Record();
		String want = seq(1, 1000000);
		java.util.concurrent.atomic.AtomicReference<SessionAttachHandle> hr = new java.util.concurrent.atomic.AtomicReference<>();
		List<String> bad = new CopyOnWriteArrayList<>();
		SessionAttachOptions o = r.options();
		OutputListener prev = o.onOutput;
		o.setOnOutput((s, off, d) -> {
			prev.onOutput(s, off, d);
			String got = new String(d, StandardCharsets.UTF_8);
			// each chunk checked where it arrives, to say which one was wrong
			if (!want.regionMatches((int) off, got, 0, d.length)) {
				int k = 0;
				while (want.charAt((int) off + k) == got.charAt(k))
					k++;
				SessionAttachHandle hh = hr.get();
				bad.add("off=" + off + " len=" + d.length + " firstbad=" + k + " reconnects="
				    + (hh == null ? -1 : hh.reconnects()) + " want=" + want.substring((int) off + k, (int) off + k + 20).replace('\n', ' ')
				    + " got=" + got.substring(k, Math.min(got.length(), k + 20)).replace('\n', ' '));
			}
		});
		SessionAttachHandle h = p.attachSession(n, o);
		hr.set(h);
		assertEquals(0, h.waitForExit().code);
		assertEquals(List.of(), bad, "chunks whose bytes are not the output at their offset");
		assertEquals(0, r.checkContiguous(0));
		assertText(want, r.text());
		assertTrue(h.reconnects() >= 3, "reconnects " + h.reconnects());
	}

	@Test
	void attachResumeCuts() throws Exception { // attach.resume.cuts
		String n = Kit.name("cuts");
		sandbox.createSession(new CreateSessionOptions().setName(n).setBufferSize(4 << 20)
		    .setCommand("for i in $(seq 1 40); do seq $((i*1000)) $((i*1000+999)); sleep 0.1; done"));
		Sandbox p = Kit.proxied();
		Record r = new Record();
		SessionAttachHandle h = p.attachSession(n, r.options());
		for (int i = 0; i < 3; i++) {
			Thread.sleep(1000);
			Kit.control("cut");
		}
		assertEquals(0, h.waitForExit().code);
		StringBuilder want = new StringBuilder();
		for (int i = 1; i <= 40; i++)
			want.append(seq(i * 1000, i * 1000 + 999));
		assertEquals(0, r.checkContiguous(0));
		assertText(want.toString(), r.text());
		assertTrue(h.reconnects() >= 1, "reconnects " + h.reconnects());
	}

	@Test
	void attachResumeGap() { // attach.resume.gap
		String n = Kit.name("gap");
		sandbox.createSession(new CreateSessionOptions().setName(n).setBufferSize(4096)
		    .setCommand("sleep 1; head -c 20000000 /dev/zero | tr '\\0' a; echo end"));
		Sandbox p = Kit.proxied();
		Kit.control("cut-after 16384");
		Record r = new Record();
		// since 0: what the process wrote before the attach counts too
		SessionAttachHandle h = p.attachSession(n, r.options().setSince(0));
		assertEquals(0, h.waitForExit().code);
		long lost = r.checkContiguous(0);
		assertTrue(r.events.stream().anyMatch(e -> e[0].equals("gap")), "a gap event");
		assertEquals(sandbox.getSession(n).outputBytes, r.size() + lost);
		assertEquals(lost, h.gapBytes());
	}

	@Test
	void attachResumeStrict() { // attach.resume.strict
		String n = Kit.name("strict");
		sandbox.createSession(new CreateSessionOptions().setName(n).setBufferSize(4096)
		    .setCommand("sleep 1; head -c 20000000 /dev/zero | tr '\\0' a; echo end"));
		Sandbox p = Kit.proxied();
		Kit.control("cut-after 16384");
		SessionAttachHandle h = p.attachSession(n, new SessionAttachOptions().setSince(0).setStrict(true));
		GapException e = assertThrows(GapException.class, h::waitForExit);
		assertTrue(e.from < e.to, e.getMessage());
	}

	@Test
	void attachFrontKilled() { // attach.front_killed
		String n = Kit.name("front");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		Record r = new Record();
		SessionAttachHandle h = sandbox.attachSession(n, r.options());
		h.live().join();
		Kit.control("kill-front");
		try {
			h.write("after\n");
			Kit.eventually(() -> r.text().equals("after\n"), "the echo while the front is down");
		} finally {
			Kit.control("start-front");
		}
		Kit.eventually(() -> {
			try {
				sandbox.health();
				return true;
			} catch (LodgeException e) {
				return false;
			}
		}, "the front is back");
		sandbox.signalSession(n, "TERM");
		ExecExitInfo x = h.waitForExit();
		assertEquals("TERM", x.signal);
		assertEquals("after\n", r.text());
		assertEquals(0, r.checkContiguous(0));
	}

	@Test
	void streamConnectionLost() { // stream.connection_lost
		Sandbox p = Kit.proxied();
		StreamTest.Sink out = new StreamTest.Sink();
		ExecStreamHandle h = p.execStream(new ExecStreamOptions().setCommand("echo $$; exec sleep 600")
		    .setOnStdout(out::add));
		Kit.eventually(() -> out.text().endsWith("\n"), "the pid");
		long pid = Long.parseLong(out.text().trim());
		Kit.control("cut");
		assertThrows(ConnectionLostException.class, h::waitForExit);
		Kit.eventually(() -> !Kit.alive(pid), "the process was killed");
	}

	@Test
	void streamCutMidOutputNeverSuccess() { // connection-lost never success: cut during output
		Sandbox p = Kit.proxied();
		Kit.control("cut-after 300000");
		List<Long> got = new ArrayList<>();
		ExecStreamHandle h = p.execStream(new ExecStreamOptions().setCommand("head -c 10000000 /dev/zero")
		    .setOnStdout(b -> got.add((long) b.length)));
		assertThrows(ConnectionLostException.class, h::waitForExit);
		assertTrue(h.exitFuture().isCompletedExceptionally());
	}
}
