package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The session.* and error.* scenarios of tests/sdk/SCENARIOS.md. */
class SessionTest {
	private final Sandbox sandbox = Kit.sandbox();

	@AfterEach
	void cleanup() {
		Kit.cleanup();
	}

	private static String text(byte[] b) {
		return new String(b, StandardCharsets.UTF_8);
	}

	@Test
	void sessionCreate() { // session.create
		String n = Kit.name("create");
		Session s = sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("bash --norc")
		    .setWorkDir("/tmp").setPty(true).setCols(120).setRows(40));
		assertTrue(s.id.matches("[0-9a-f]{32}"), s.id);
		assertEquals(n, s.name);
		assertTrue(s.pty);
		assertEquals(120, s.cols);
		assertEquals(40, s.rows);
		assertEquals("/tmp", s.workDir);
		assertEquals("running", s.state);
		assertTrue(s.pid > 0);
	}

	@Test
	void sessionCreateArgs() throws Exception { // session.create.args
		Session s = sandbox.createSessionAsync(new CreateSessionOptions().setName(Kit.name("args"))
		    .setArgs(List.of("cat"))).get();
		assertEquals("running", s.state);
		assertEquals(List.of("cat"), s.args);
		assertFalse(s.pty);
	}

	@Test
	void sessionListGet() { // session.list, session.get
		Session a = sandbox.createSession(new CreateSessionOptions().setName(Kit.name("la")).setArgs(List.of("cat")));
		Session b = sandbox.createSession(new CreateSessionOptions().setName(Kit.name("lb")).setArgs(List.of("cat")));
		Set<String> ids = sandbox.listSessions().stream().map(s -> s.id + "/" + s.name).collect(Collectors.toSet());
		assertTrue(ids.contains(a.id + "/" + a.name));
		assertTrue(ids.contains(b.id + "/" + b.name));
		assertEquals(a.id, sandbox.getSession(a.id).id);
		assertEquals(a.id, sandbox.getSession(a.name).id);
		assertEquals("running", sandbox.getSession(a.name).state);
	}

	@Test
	void sessionLog() { // session.log
		String n = Kit.name("log");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("printf abcdef"));
		Kit.exited(sandbox, n);
		SessionLog l = sandbox.sessionLogSince(n, -1);
		assertEquals("abcdef", text(l.data));
		assertEquals(0, l.start);
		assertEquals(6, l.end);
		l = sandbox.sessionLogSince(n, 2);
		assertEquals("cdef", text(l.data));
		assertEquals(2, l.start);
		assertEquals(6, l.end);
		l = sandbox.sessionLogSince(n, 100);
		assertEquals("", text(l.data));
		assertEquals(6, l.start);
		assertEquals(6, l.end);
	}

	@Test
	void sessionInput() { // session.input
		String n = Kit.name("input");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		sandbox.sendInput(n, "abc\n");
		sandbox.sendInput(n, new byte[] {0, 1});
		Kit.eventually(() -> sandbox.sessionLog(n).length == 6, "the log");
		assertArrayEquals(new byte[] {'a', 'b', 'c', '\n', 0, 1}, sandbox.sessionLog(n));
	}

	@Test
	void sessionResize() { // session.resize
		String n = Kit.name("resize");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("read x; stty size; read y")
		    .setPty(true).setCols(80).setRows(24));
		sandbox.resizeSession(n, 100, 30);
		sandbox.sendInput(n, "\n");
		Kit.eventually(() -> text(sandbox.sessionLog(n)).contains("30 100"), "30 100");
		Session s = sandbox.getSession(n);
		assertEquals(100, s.cols);
		assertEquals(30, s.rows);
	}

	@Test
	void sessionSignal() { // session.signal
		String n = Kit.name("signal");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("exec sleep 600"));
		sandbox.signalSession(n, "TERM");
		ExecExitInfo x = sandbox.waitSession(n);
		assertNull(x.code);
		assertEquals("TERM", x.signal);
		assertEquals("exited", sandbox.getSession(n).state);
	}

	@Test
	void sessionWait() throws Exception { // session.wait
		String n = Kit.name("wait");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("sleep 1; exit 4"));
		ExecExitInfo x = sandbox.waitSession(n);
		assertEquals(4, x.code);
		assertNull(x.signal);
		x = sandbox.waitSessionAsync(n).get();
		assertEquals(4, x.code);
	}

	@Test
	void sessionDelete() { // session.delete
		String n = Kit.name("delete");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("echo $$; exec sleep 600"));
		Kit.eventually(() -> text(sandbox.sessionLog(n)).endsWith("\n"), "the pid");
		long pid = Long.parseLong(text(sandbox.sessionLog(n)).trim());
		sandbox.deleteSession(n);
		NotFoundException e = assertThrows(NotFoundException.class, () -> sandbox.getSession(n));
		assertEquals(404, e.status);
		Kit.eventually(() -> !Kit.alive(pid), "the process ended");
	}

	@Test
	void sessionDeleteExited() { // session.delete.exited
		String n = Kit.name("delx");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("true"));
		Kit.exited(sandbox, n);
		sandbox.deleteSession(n);
		assertThrows(NotFoundException.class, () -> sandbox.deleteSession(n));
	}

	@Test
	void errorBadRequest() { // error.bad_request
		BadRequestException e = assertThrows(BadRequestException.class,
		    () -> sandbox.createSession(new CreateSessionOptions().setName(Kit.name("bad")).setCols(0)));
		assertEquals(400, e.status);
		assertFalse(e.daemonMessage.isEmpty());
		e = assertThrows(BadRequestException.class, () -> sandbox.getSession("a b"));
		assertEquals(400, e.status);
	}

	@Test
	void errorUnauthorized() { // error.unauthorized
		Sandbox bad = Sandbox.connect(System.getenv("LODGE_URL"), "wrong-token-0123456789");
		UnauthorizedException e = assertThrows(UnauthorizedException.class, bad::health);
		assertEquals(401, e.status);
		assertFalse(e.daemonMessage.isEmpty());
		e = assertThrows(UnauthorizedException.class, () -> bad.attachSession("x"));
		assertEquals(401, e.status);
		e = assertThrows(UnauthorizedException.class,
		    () -> bad.execStream(new ExecStreamOptions().setCommand("true")));
		assertEquals(401, e.status);
	}

	@Test
	void errorNotFound() { // error.not_found
		String n = "no-such-session";
		for (Runnable r : List.<Runnable>of(() -> sandbox.getSession(n), () -> sandbox.deleteSession(n),
		    () -> sandbox.sessionLog(n), () -> sandbox.attachSession(n))) {
			NotFoundException e = assertThrows(NotFoundException.class, r::run);
			assertEquals(404, e.status);
			assertEquals("not_found", e.code);
			assertFalse(e.daemonMessage.isEmpty());
		}
	}

	@Test
	void errorConflict() { // error.conflict
		String n = Kit.name("conflict");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		ConflictException e = assertThrows(ConflictException.class,
		    () -> sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat"))));
		assertEquals(409, e.status);
		String x = Kit.name("exited");
		sandbox.createSession(new CreateSessionOptions().setName(x).setCommand("true"));
		Kit.exited(sandbox, x);
		e = assertThrows(ConflictException.class, () -> sandbox.sendInput(x, "hi"));
		assertEquals(409, e.status);
	}

	@Test
	void errorPayloadTooLarge() { // error.payload_too_large
		String n = Kit.name("big");
		sandbox.createSession(new CreateSessionOptions().setName(n).setArgs(List.of("cat")));
		PayloadTooLargeException e = assertThrows(PayloadTooLargeException.class,
		    () -> sandbox.sendInput(n, "x".repeat(9 << 20)));
		assertEquals(413, e.status);
	}

	@Test
	void errorSpawnFailedSession() { // error.spawn_failed
		SpawnFailedException e = assertThrows(SpawnFailedException.class, () -> sandbox.createSession(
		    new CreateSessionOptions().setName(Kit.name("spawn")).setCommand("true").setWorkDir("/nonexistent")));
		assertEquals(422, e.status);
	}

	@Test
	void errorUnavailable() { // error.unavailable
		String n = Kit.name("unavail");
		sandbox.createSession(new CreateSessionOptions().setName(n).setCommand("exec sleep 600"));
		sandbox.sendInput(n, "x".repeat(3 << 20));
		UnavailableException e = assertThrows(UnavailableException.class,
		    () -> sandbox.sendInput(n, "x".repeat(2 << 20)));
		assertEquals(503, e.status);
	}

	@Test
	void errorUnknownCode() { // error.unknown_code
		ApiException e = ApiException.fromReply(418, "{\"error\":{\"code\":\"teapot\",\"message\":\"m\"}}");
		assertEquals(ApiException.class, e.getClass());
		assertEquals("teapot", e.code);
		assertEquals(418, e.status);
		assertEquals("m", e.daemonMessage);
		assertInstanceOf(InternalException.class, ApiException.fromReply(500,
		    "{\"error\":{\"code\":\"internal\",\"message\":\"m\"}}"));
	}
}
