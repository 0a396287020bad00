package dev.lodge.sdk;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** What {@link Sandbox#execStream} runs, and its callbacks. */
public class ExecStreamOptions {
	String command;
	List<String> args;
	String workDir;
	Map<String, String> env;
	String user;
	Double timeoutSeconds;
	Boolean tty;
	Integer cols;
	Integer rows;
	Consumer<byte[]> onStdout;
	Consumer<byte[]> onStderr;
	Consumer<String> onStdoutText;
	Consumer<String> onStderrText;
	Consumer<ApiException> onError;
	OutputListener onOutput;

	/** Options with nothing set. */
	public ExecStreamOptions() {
	}

	/** The command, run as {@code SHELL -c command}. */
	public ExecStreamOptions setCommand(String command) { this.command = command; return this; }
	/** An argv run directly, with no shell (instead of a command). */
	public ExecStreamOptions setArgs(List<String> args) { this.args = List.copyOf(args); return this; }
	/** The working directory (the protocol's {@code workDir}). */
	public ExecStreamOptions setWorkDir(String workDir) { this.workDir = workDir; return this; }
	/** The working directory: the same as {@link #setWorkDir}. */
	public ExecStreamOptions setWorkdir(String workDir) { this.workDir = workDir; return this; }
	/** Variables added to the user's default environment. */
	public ExecStreamOptions setEnv(Map<String, String> env) { this.env = new LinkedHashMap<>(env); return this; }
	/** The user to run as (only when lodged runs as root). */
	public ExecStreamOptions setUser(String user) { this.user = user; return this; }
	/** The server-side limit on the command's run time; not a client timeout. */
	public ExecStreamOptions setTimeoutSeconds(double seconds) { this.timeoutSeconds = seconds; return this; }
	/** Run on a pseudo-terminal (stdout and stderr merged onto stdout). */
	public ExecStreamOptions setTty(boolean tty) { this.tty = tty; return this; }
	/** The terminal's columns. */
	public ExecStreamOptions setCols(int cols) { this.cols = cols; return this; }
	/** The terminal's rows. */
	public ExecStreamOptions setRows(int rows) { this.rows = rows; return this; }
	/** Called with each chunk of stdout, in order, on one thread; the stream waits while it runs. */
	public ExecStreamOptions setOnStdout(Consumer<byte[]> f) { this.onStdout = f; return this; }
	/** Called with each chunk of stderr. */
	public ExecStreamOptions setOnStderr(Consumer<byte[]> f) { this.onStderr = f; return this; }
	/** Called with stdout as text, decoded by one incremental UTF-8 decoder. */
	public ExecStreamOptions setOnStdoutText(Consumer<String> f) { this.onStdoutText = f; return this; }
	/** Called with stderr as text, decoded by one incremental UTF-8 decoder. */
	public ExecStreamOptions setOnStderrText(Consumer<String> f) { this.onStderrText = f; return this; }
	/** Called with each error the daemon reports on the open stream (such as a bad signal name). */
	public ExecStreamOptions setOnError(Consumer<ApiException> f) { this.onError = f; return this; }
	/** Called with every output chunk with its stream and offset. */
	public ExecStreamOptions setOnOutput(OutputListener f) { this.onOutput = f; return this; }

	Map<String, Object> startMessage() {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("type", "start");
		ExecOptions.put(m, "command", command);
		ExecOptions.put(m, "args", args);
		ExecOptions.put(m, "workDir", workDir);
		ExecOptions.put(m, "env", env);
		ExecOptions.put(m, "user", user);
		ExecOptions.put(m, "timeoutSeconds", timeoutSeconds);
		ExecOptions.put(m, "tty", tty);
		ExecOptions.put(m, "cols", cols);
		ExecOptions.put(m, "rows", rows);
		return m;
	}
}
