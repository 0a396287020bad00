package dev.lodge.sdk;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every Java example of the two seed documents, as written: each class of
 * dev.lodge.sdk.seeds is the example's text inside a main, with only its
 * imports and {@code Sandbox sandbox = Sandbox.connect();} added (an
 * example that uses the {@code session} or {@code handle} of an earlier
 * one starts with that earlier example's text, unchanged). Each runs as a
 * JVM of its own against the kit's lodged and is checked against what the
 * seed says it prints.
 *
 * Examples that wait on an interactive bash are ended from outside once
 * {@code hello} was seen: the session's bash by the REST input
 * {@code exit}; the exec stream's bash (no API call reaches it) by
 * SIGKILL, found as the one bash the run added under this suite's own
 * lodged (a descendant of tests/sdk/with-lodged, an ancestor of this JVM).
 */
class SeedsTest {
	private static final Path SRC = Path.of("src/test/java/dev/lodge/sdk/seeds");
	private final Sandbox sandbox = Kit.sandbox();

	@BeforeEach
	void workspace() throws IOException {
		Path w = Path.of("/workspace");
		Files.createDirectories(w);
		if (!Files.exists(w.resolve("package.json")))
			Files.writeString(w.resolve("package.json"),
			    "{\"name\":\"workspace\",\"version\":\"1.0.0\",\"private\":true}\n");
		if (!Files.exists(w.resolve("index.js")))
			Files.writeString(w.resolve("index.js"), "console.log('index', process.env.NODE_ENV)\n");
	}

	@AfterEach
	void endShell() {
		try {
			if (sandbox.getSession("shell").isRunning()) {
				sandbox.sendInput("shell", "exit\n");
				sandbox.waitSession("shell", Duration.ofSeconds(90));
			}
			sandbox.deleteSession("shell");
		} catch (NotFoundException e) {
			// none made
		}
	}

	/** An example's JVM, its stdout read as it comes. */
	static final class Run {
		final Process p;
		final ByteArrayOutputStream out = new ByteArrayOutputStream();
		final Thread reader;

		Run(String cls) throws IOException {
			this("dev.lodge.sdk.seeds." + cls, env -> { });
		}

		/** A main class's JVM, with its environment changed by {@code env}. */
		Run(String mainClass, java.util.function.Consumer<java.util.Map<String, String>> env) throws IOException {
			// the suite's own class path: the SDK, its dependencies, the examples
			String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
			ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java")
			    .toString(), "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, mainClass);
			env.accept(pb.environment());
			pb.redirectError(ProcessBuilder.Redirect.INHERIT);
			p = pb.start();
			InputStream in = p.getInputStream();
			reader = new Thread(() -> {
				byte[] b = new byte[8192];
				try {
					for (int n; (n = in.read(b)) > 0;) {
						synchronized (out) {
							out.write(b, 0, n);
						}
					}
				} catch (IOException e) {
					// the process ended
				}
			});
			reader.start();
		}

		String text() {
			synchronized (out) {
				return out.toString(StandardCharsets.UTF_8);
			}
		}

		void readUntil(String regex) {
			Pattern pat = Pattern.compile(regex);
			Kit.eventually(Duration.ofSeconds(90), () -> pat.matcher(text()).find(),
			    "output matching " + regex + ", got " + text());
		}

		String finish(int seconds) throws Exception {
			if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
				p.destroyForcibly();
				fail("the example did not end; printed " + text());
			}
			reader.join();
			assertEquals(0, p.exitValue(), "the example failed; printed " + text());
			return text();
		}
	}

	/** The bash processes under this suite's lodged now. */
	private static Set<Long> ourBashes() {
		ProcessHandle kit = ProcessHandle.current();
		while (kit != null && !kit.info().commandLine().orElse("").contains("with-lodged"))
			kit = kit.parent().orElse(null);
		assertNotNull(kit, "not run under tests/sdk/with-lodged");
		return kit.descendants()
		    .filter(h -> h.info().command().orElse("").endsWith("/bash"))
		    .map(ProcessHandle::pid).collect(Collectors.toSet());
	}

	private static String lastLine(String out) {
		String[] l = out.split("\n");
		return l[l.length - 1].trim();
	}

	@Test
	void sessionsCreate() throws Exception {
		String id = new Run("SessionsCreate").finish(60).trim();
		assertTrue(id.matches("[0-9a-f]{32}"), id);
		Session s = sandbox.getSession("shell");
		assertEquals(id, s.id);
		assertTrue(s.pty);
		assertEquals(120, s.cols);
		assertEquals(40, s.rows);
		assertEquals("/workspace", s.workDir);
	}

	@Test
	void sessionsAttach() throws Exception {
		Run r = new Run("SessionsAttach");
		r.readUntil("[\r\n]hello\r\n"); // the shell ran the echo
		sandbox.sendInput("shell", "exit\n");
		String out = r.finish(60);
		assertTrue(out.contains("exit"), out);
		assertEquals(0, sandbox.getSession("shell").exitCode);
	}

	@Test
	void sessionsLog() throws Exception {
		String out = new Run("SessionsLog").finish(60);
		String printed = out.split("\n", 2)[1];
		assertTrue(printed.endsWith("\n"));
		// what it printed is the ring's start, as the test reads it now
		String now = new String(sandbox.sessionLog("shell"), StandardCharsets.UTF_8);
		assertTrue(now.startsWith(printed.substring(0, printed.length() - 1)), printed + " / " + now);
	}

	@Test
	void execOneShot() throws Exception {
		assertEquals("hello\n\n0\n", new Run("ExecOneShot").finish(60));
	}

	@Test
	void execStreamLive() throws Exception {
		String out = new Run("ExecStreamLive").finish(120);
		assertEquals("0", lastLine(out));
		assertTrue(Files.exists(Path.of("/workspace/package-lock.json")));
	}

	@Test
	void execStreamPty() throws Exception {
		Set<Long> before = ourBashes();
		Run r = new Run("ExecStreamPty");
		r.readUntil("[\r\n]hello\r\n");
		Set<Long> added = ourBashes();
		added.removeAll(before);
		assertEquals(1, added.size(), added.toString());
		ProcessHandle.of(added.iterator().next()).ifPresent(ProcessHandle::destroyForcibly);
		String out = r.finish(60);
		// killed by SIGKILL: no exit code
		assertTrue(out.endsWith("null\n"), out);
	}

	@Test
	void execSignals() throws Exception {
		new Run("ExecSignals").finish(60);
	}

	/** The seed documents: $LODGE_SEEDS, or the tree's copy in tests/sdk/seeds. */
	private static String seeds() throws IOException {
		List<Path> dirs = new ArrayList<>();
		String env = System.getenv("LODGE_SEEDS");
		if (env != null)
			dirs.add(Path.of(env));
		Path top = Path.of("").toAbsolutePath().getParent().getParent().getParent();
		dirs.add(top.resolve("tests").resolve("sdk").resolve("seeds"));
		StringBuilder b = new StringBuilder();
		for (Path d : dirs) {
			if (!Files.isDirectory(d))
				continue;
			try (var l = Files.list(d)) {
				for (Path f : (Iterable<Path>) l.sorted()::iterator)
					b.append(Files.readString(f)).append('\n');
			}
			return b.toString();
		}
		return null;
	}

	private static String squeeze(String s) {
		return s.replaceAll("\n\\s*\n", "\n").strip();
	}

	@Test
	void seedFilesAreTheSeeds() throws IOException {
		String seeds = seeds();
		assertNotNull(seeds, "no seed documents in tests/sdk/seeds");
		String norm = squeeze(seeds);
		try (var l = Files.list(SRC)) {
			for (Path f : (Iterable<Path>) l::iterator) {
				String t = Files.readString(f);
				String head = "Sandbox sandbox = Sandbox.connect();\n";
				int at = t.indexOf(head);
				assertTrue(at > 0, f.toString());
				String body = t.substring(at + head.length(), t.lastIndexOf("\t}\n}"));
				for (String part : body.split("\n\\s*\n(?=Session|SessionAttachHandle|byte|ExecResult|"
				    + "ExecStreamHandle|handle\\.)"))
					assertTrue(norm.contains(squeeze(part)), f + ": " + part);
			}
		}
	}
}
