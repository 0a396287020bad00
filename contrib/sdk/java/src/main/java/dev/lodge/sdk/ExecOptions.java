package dev.lodge.sdk;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What {@link Sandbox#exec} runs: {@code command} (by the shell) or {@code args}. */
public class ExecOptions {
	String command;
	List<String> args;
	String workDir;
	Map<String, String> env;
	String user;
	Double timeoutSeconds;
	String stdin;
	String encoding;
	Long maxOutputBytes;

	/** Options with nothing set. */
	public ExecOptions() {
	}

	/** The command, run as {@code SHELL -c command}. */
	public ExecOptions setCommand(String command) { this.command = command; return this; }
	/** An argv run directly, with no shell (instead of a command). */
	public ExecOptions setArgs(List<String> args) { this.args = List.copyOf(args); return this; }
	/** The working directory. */
	public ExecOptions setWorkDir(String workDir) { this.workDir = workDir; return this; }
	/** Variables added to the user's default environment (order kept). */
	public ExecOptions setEnv(Map<String, String> env) { this.env = new LinkedHashMap<>(env); return this; }
	/** The user to run as (only when lodged runs as root). */
	public ExecOptions setUser(String user) { this.user = user; return this; }
	/** The server-side limit: the command is ended after this long (0: none); not a client timeout. */
	public ExecOptions setTimeoutSeconds(double seconds) { this.timeoutSeconds = seconds; return this; }
	/** Text fed to the command's stdin, then closed (default: /dev/null). */
	public ExecOptions setStdin(String stdin) { this.stdin = stdin; return this; }
	/** {@code "utf8"} (default) or {@code "base64"}; see {@link ExecResult#stdoutBytes()}. */
	public ExecOptions setEncoding(String encoding) { this.encoding = encoding; return this; }
	/** The most output kept per stream; the rest is read and dropped. */
	public ExecOptions setMaxOutputBytes(long n) { this.maxOutputBytes = n; return this; }

	Map<String, Object> toJson() {
		Map<String, Object> m = new LinkedHashMap<>();
		put(m, "command", command);
		put(m, "args", args);
		put(m, "workDir", workDir);
		put(m, "env", env);
		put(m, "user", user);
		put(m, "timeoutSeconds", timeoutSeconds);
		put(m, "stdin", stdin);
		put(m, "encoding", encoding);
		put(m, "maxOutputBytes", maxOutputBytes);
		return m;
	}

	static void put(Map<String, Object> m, String k, Object v) {
		if (v != null)
			m.put(k, v);
	}
}
