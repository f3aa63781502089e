// Reads JSON arrays of LaTeX strings, one array a line, from stdin; answers each line with a
// JSON array holding, for each string, null when KaTeX parses it in display mode and the
// parser's message otherwise. One process serves a whole test session.
"use strict";
const katex = require(process.argv[2] || "katex");
const readline = require("readline");

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  const answers = JSON.parse(line).map((tex) => {
    try {
      katex.renderToString(tex, { displayMode: true, throwOnError: true, strict: "error",
                                  trust: false, maxExpand: 1000 });
      return null;
    } catch (error) {
      return String(error.message || error);
    }
  });
  process.stdout.write(JSON.stringify(answers) + "\n");
});
