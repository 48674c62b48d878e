// Node: worker threads, timers, a child process, JSON and crypto.
const { Worker } = require("worker_threads");
const crypto = require("crypto");
const { execFileSync } = require("child_process");
const w = new Worker("const {parentPort}=require('worker_threads'); let s=0; for (let i=0;i<1e6;i++) s+=i; parentPort.postMessage(s);", { eval: true });
w.on("message", (s) => {
  console.log("worker sum", s);
  console.log("sha256", crypto.createHash("sha256").update("picos").digest("hex"));
  console.log("json", JSON.stringify(JSON.parse('{"a":[1,2,{"b":null}]}')));
  console.log("child", execFileSync("/bin/echo", ["hi"]).toString().trim());
  setTimeout(() => { console.log("timer fired"); process.exitCode = 4; }, 20);
});
