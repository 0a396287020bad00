package dev.lodge.sdk;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.BooleanSupplier;

/** The conformance kit's side: the daemon of tests/sdk/with-lodged and its control line. */
final class Kit {
	private static final List<String> made = new ArrayList<>();
	private static volatile boolean proxy;

	private Kit() {
	}

	static Sandbox sandbox() {
		return Sandbox.connect();
	}

	/** A unique session name. */
	static String name(String what) {
		String n = "java-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
		synchronized (made) {
			made.add(n);
		}
		return n;
	}

	/** Deletes every session a test named, quietly. */
	static void cleanup() {
		Sandbox s = sandbox();
		List<String> names;
		synchronized (made) {
			names = new ArrayList<>(made);
			made.clear();
		}
		for (String n : names) {
			try {
				s.deleteSession(n);
			} catch (LodgeException e) {
				// gone already
			}
		}
	}

	/** One line to LODGE_KIT_CONTROL, its reply back. */
	static String control(String line) {
		String[] hp = System.getenv("LODGE_KIT_CONTROL").split(":");
		try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
			OutputStream o = s.getOutputStream();
			o.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
			o.flush();
			String r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
			    .readLine();
			if (r == null || !r.startsWith("ok"))
				throw new AssertionError("kit " + line + ": " + r);
			return r;
		} catch (java.io.IOException e) {
			throw new AssertionError("kit " + line + ": " + e, e);
		}
	}

	/** A client of the kit's proxy (a new proxy each time). */
	static Sandbox proxied() {
		String port = control("proxy").split(" ")[1];
		proxy = true;
		return Sandbox.connect("http://127.0.0.1:" + port, System.getenv("LODGE_TOKEN"));
	}

	/** Faults off again: the proxy passes everything. */
	static void calm() {
		if (proxy)
			control("cut-after 0");
	}

	/** Polls until true, for at most {@code d}. */
	static void eventually(Duration d, BooleanSupplier what, String msg) {
		long end = System.nanoTime() + d.toNanos();
		while (!what.getAsBoolean()) {
			if (System.nanoTime() > end)
				throw new AssertionError("not within " + d + ": " + msg);
			try {
				Thread.sleep(50);
			} catch (InterruptedException e) {
				throw new AssertionError(e);
			}
		}
	}

	static void eventually(BooleanSupplier what, String msg) {
		eventually(Duration.ofSeconds(10), what, msg);
	}

	static boolean alive(long pid) {
		return new java.io.File("/proc/" + pid).exists() && !zombie(pid);
	}

	private static boolean zombie(long pid) {
		try {
			String st = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
			return st.substring(st.lastIndexOf(')') + 2).startsWith("Z");
		} catch (java.io.IOException e) {
			return false;
		}
	}

	/** Waits until a session has exited. */
	static Session exited(Sandbox s, String ref) {
		s.waitSession(ref, Duration.ofSeconds(30));
		return s.getSession(ref);
	}
}
