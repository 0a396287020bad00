package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The exec.* and connect.* scenarios of tests/sdk/SCENARIOS.md. */
class ExecTest {
	private final Sandbox sandbox = Kit.sandbox();

	@Test
	void connectEnv() { // connect.env
		Health h = Sandbox.connect().health();
		assertEquals("ok", h.status);
		assertFalse(h.version.isEmpty());
		assertTrue(h.sessions >= 0);
	}

	@Test
	void connectExplicit() { // connect.explicit (the environment is read only when a value is missing)
		Health h = Sandbox.connect(System.getenv("LODGE_URL"), System.getenv("LODGE_TOKEN")).health();
		assertEquals("ok", h.status);
		assertTrue(h.maxMessageBytes > 0);
	}

	@Test
	void execBasic() { // exec.basic
		ExecResult r = sandbox.exec(new ExecOptions().setCommand("echo hello"));
		assertEquals("hello\n", r.stdout);
		assertEquals("", r.stderr);
		assertEquals(0, r.exitCode);
		assertNull(r.signal);
		assertFalse(r.timedOut);
		assertFalse(r.truncated);
		assertTrue(r.durationMs >= 0);
	}

	@Test
	void execExitCode() { // exec.exit_code
		ExecResult r = sandbox.exec("echo out; echo err >&2; exit 3");
		assertEquals("out\n", r.stdout);
		assertEquals("err\n", r.stderr);
		assertEquals(3, r.exitCode);
		assertNull(r.signal);
	}

	@Test
	void execSignal() { // exec.signal
		ExecResult r = sandbox.exec("kill -TERM $$");
		assertNull(r.exitCode);
		assertEquals("TERM", r.signal);
		r = sandbox.exec("kill -KILL $$");
		assertNull(r.exitCode);
		assertEquals("KILL", r.signal);
	}

	@Test
	void execTimeout() throws Exception { // exec.timeout
		ExecResult r = sandbox.execAsync(new ExecOptions().setCommand("sleep 30").setTimeoutSeconds(1))
		    .get(10, TimeUnit.SECONDS);
		assertTrue(r.timedOut);
		assertNull(r.exitCode);
		assertEquals("TERM", r.signal);
	}

	@Test
	void execTimeoutFraction() { // exec.timeout.fraction
		ExecResult r = sandbox.exec(new ExecOptions().setArgs(List.of("sleep", "30")).setTimeoutSeconds(0.5));
		assertTrue(r.timedOut);
		assertEquals("TERM", r.signal);
	}

	@Test
	void execSpawnFailed() { // exec.spawn_failed, error.spawn_failed
		SpawnFailedException e = assertThrows(SpawnFailedException.class,
		    () -> sandbox.exec(new ExecOptions().setCommand("true").setWorkDir("/nonexistent")));
		assertEquals(422, e.status);
		assertEquals("spawn_failed", e.code);
		assertFalse(e.daemonMessage.isEmpty());
		e = assertThrows(SpawnFailedException.class,
		    () -> sandbox.exec(new ExecOptions().setArgs(List.of("/nonexistent/program"))));
		assertEquals(422, e.status);
	}

	@Test
	void execBase64() { // exec.base64
		ExecResult r = sandbox.exec(new ExecOptions().setCommand("printf '\\377\\000A\\n'").setEncoding("base64"));
		assertEquals("/wBBCg==", r.stdout);
		assertArrayEquals(new byte[] {(byte) 0xff, 0, 'A', '\n'}, r.stdoutBytes());
		r = sandbox.exec("printf '\\377\\000A\\n'");
		assertEquals("\ufffd\u0000A\n", r.stdout);
	}

	@Test
	void execWorkdirEnvUser() { // exec.workdir_env_user
		String me = System.getProperty("user.name");
		ExecResult r = sandbox.exec(new ExecOptions().setCommand("pwd; echo \"$FOO\"; id -un")
		    .setWorkDir("/tmp").setEnv(Map.of("FOO", "bar")).setUser(me));
		assertEquals("/tmp\nbar\n" + me + "\n", r.stdout);
		assertEquals(0, r.exitCode);
		assertThrows(SpawnFailedException.class,
		    () -> sandbox.exec(new ExecOptions().setCommand("true").setUser("no-such-user-xyz")));
	}

	@Test
	void execInterrupted() throws Exception { // an interrupted thread ends the call promptly
		java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
		Thread t = new Thread(() -> {
			try {
				sandbox.exec("sleep 30");
			} catch (Throwable e) {
				thrown.set(e);
			}
		});
		t.start();
		Thread.sleep(500);
		long t0 = System.nanoTime();
		t.interrupt();
		t.join(10000);
		assertFalse(t.isAlive(), "the call still runs");
		assertInstanceOf(LodgeInterruptedException.class, thrown.get());
		assertTrue(System.nanoTime() - t0 < 10_000_000_000L);
	}

	@Test
	void execStdin() { // exec.stdin
		assertEquals("abc", sandbox.exec(new ExecOptions().setArgs(List.of("cat")).setStdin("abc")).stdout);
	}

	@Test
	void execTruncated() { // exec.truncated
		ExecResult r = sandbox.exec(new ExecOptions().setCommand("head -c 100000 /dev/zero").setMaxOutputBytes(10));
		assertTrue(r.truncated);
		assertEquals("\0".repeat(10), r.stdout);
		assertEquals(0, r.exitCode);
		assertEquals(10, r.stdoutBytes().length);
		assertEquals("\0".repeat(10), new String(r.stdoutBytes(), StandardCharsets.UTF_8));
	}
}
