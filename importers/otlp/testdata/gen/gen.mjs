// Regenerates the real-framework traces (see README.md): those of the
// importer tests in ../ and those of the cache.unstable-prefix fixtures in
// the repository's fixtures/.
import { execFileSync } from "node:child_process";
for (const [script, out] of [["langgraph.mjs", ".."], ["aisdk.mjs", ".."], ["cache.mjs", "../../../../fixtures"]]) {
  execFileSync(process.execPath, [script, out], { stdio: "inherit", cwd: import.meta.dirname });
}
