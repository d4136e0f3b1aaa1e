// Regenerates the real-framework fixtures in ../ (see README.md).
import { execFileSync } from "node:child_process";
for (const script of ["langgraph.mjs", "aisdk.mjs"]) {
  execFileSync(process.execPath, [script, ".."], { stdio: "inherit", cwd: import.meta.dirname });
}
