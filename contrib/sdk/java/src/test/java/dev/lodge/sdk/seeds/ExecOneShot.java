package dev.lodge.sdk.seeds;

import dev.lodge.sdk.*;
import java.util.Map;

/** A seed example as written; only the imports and the line obtaining {@code sandbox} added. */
public class ExecOneShot {
	public static void main(String[] argv) {
Sandbox sandbox = Sandbox.connect();

ExecResult result = sandbox.exec(new ExecOptions().setCommand("echo hello"));
System.out.println(result.stdout);   // "hello\n"
System.out.println(result.exitCode);

// With options
ExecResult result2 = sandbox.exec(
    new ExecOptions()
        .setCommand("node index.js")
        .setWorkDir("/workspace")
        .setEnv(Map.of("NODE_ENV", "production"))
        .setTimeoutSeconds(30)
);

	}
}
