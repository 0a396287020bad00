package dev.lodge.sdk.seeds;

import dev.lodge.sdk.*;
import java.nio.charset.StandardCharsets;

/** A seed example as written; only the imports and the line obtaining {@code sandbox} added. */
public class ExecSignals {
	public static void main(String[] argv) {
Sandbox sandbox = Sandbox.connect();

ExecStreamHandle handle = sandbox.execStream(
    new ExecStreamOptions()
        .setCommand("bash")
        .setTty(true)
        .setCols(120)
        .setRows(40)
        .setOnStdout(chunk ->
            System.out.print(new String(chunk, StandardCharsets.UTF_8)))
);

handle.signal("INT");
handle.signal("TERM");

	}
}
