package dev.lodge.sdk.seeds;

import dev.lodge.sdk.*;
import java.nio.charset.StandardCharsets;

/** A seed example as written; only the imports and the line obtaining {@code sandbox} added. */
public class ExecStreamLive {
	public static void main(String[] argv) {
Sandbox sandbox = Sandbox.connect();

ExecStreamHandle handle = sandbox.execStream(
    new ExecStreamOptions()
        .setCommand("npm install")
        .setWorkDir("/workspace")
        .setOnStdout(chunk ->
            System.out.print(new String(chunk, StandardCharsets.UTF_8)))
);

ExecExitInfo exit = handle.waitForExit();
System.out.println(exit.code);

	}
}
