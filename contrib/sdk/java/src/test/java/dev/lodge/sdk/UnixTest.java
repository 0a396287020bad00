package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** connect.unix of tests/sdk/SCENARIOS.md: no URL, no token, the kit's LODGE_RUNDIR. */
class UnixTest {
	/** Run in a JVM without LODGE_URL and LODGE_TOKEN: health, exec, an exec stream. */
	public static void main(String[] args) {
		Sandbox s = Sandbox.connect();
		System.out.println("socket " + s.socket());
		System.out.println("health " + s.health().status);
		System.out.print("exec " + s.exec("echo unix").stdout);
		StringBuilder out = new StringBuilder();
		ExecExitInfo x = s.execStream(new ExecStreamOptions().setCommand("echo unix")
		    .setOnStdout(b -> out.append(new String(b, StandardCharsets.UTF_8)))).waitForExit();
		System.out.print("stream " + x.code + " " + out);
	}

	@Test
	void connectUnix() throws Exception { // connect.unix
		String rundir = System.getenv("LODGE_RUNDIR");
		assertNotNull(rundir, "run under tests/sdk/with-lodged");
		String out = new SeedsTest.Run("dev.lodge.sdk.UnixTest", env -> {
			env.remove("LODGE_URL");
			env.remove("LODGE_TOKEN");
		}).finish(60);
		assertEquals("socket " + Path.of(rundir, "lodged.sock") + "\nhealth ok\nexec unix\nstream 0 unix\n", out);
	}

	@Test
	void noSocket() { // a Unix socket that is not there: connection lost, saying which
		Sandbox s = Sandbox.connect(new ConnectOptions().setSocket(Path.of("/nonexistent/lodged.sock")));
		ConnectionLostException e = assertThrows(ConnectionLostException.class, s::health);
		assertTrue(e.getMessage().contains("cannot be reached"), e.getMessage());
	}
}
