--[[ Unit tests of plugins/cli_filter.lua with a stubbed `slurm` table (Lua 5.1).

    lua5.1 tests/plugins/test_cli_filter.lua ROOT [TEST NAME | --list] [TMPDIR]

Mode "plan" runs a stand-in for `mlsub plan --for-sbatch` (a /bin/sh script written to
TMPDIR) that records its arguments and prints a canned reply.
--]]

local ROOT = arg[1]
local TMP = arg[3] or os.getenv("TMPDIR") or "/tmp"
local H = dofile(ROOT .. "/tests/plugins/harness.lua")(ROOT)
local T = H.suite()
local PLUGIN = "plugins/cli_filter.lua"

local TAG = "mlsched:decision=42:0123456789ab"
local SCRIPT = "/home/u/train.sh"

local function sbatch(fields)
   local options = { type = "sbatch", ["job-name"] = "train", argv = { SCRIPT } }
   for k, v in pairs(fields or {}) do
      options[k] = v
   end
   return options
end

-- Run the pre_submit hook once; returns rc, the options written, the log.
local function pre_submit(fields, site, offset)
   local M, log = H.load(PLUGIN)
   if site then
      M.site = site
   end
   local options, writes = H.proxy(fields)
   local rc = slurm_cli_pre_submit(options, offset or 0)
   return rc, writes, log
end

local function said(log)
   return table.concat(log.info, "\n")
end

-- --- the stand-in plan command ------------------------------------------------------------

local STUB = TMP .. "/plan-stub.sh"
local ARGS = TMP .. "/plan-args"
local REPLY = TMP .. "/plan-reply"
local STATUS = TMP .. "/plan-status"

local function stub(reply, status, extra)
   H.write(STUB, table.concat({
      "#!/bin/sh",
      ": > " .. ARGS,
      'for a in "$@"; do printf \'%s\\000\' "$a" >> ' .. ARGS .. "; done",
      extra or "",
      "cat " .. REPLY,
      "exit $(cat " .. STATUS .. ")",
      "",
   }, "\n"))
   H.write(REPLY, reply)
   H.write(STATUS, tostring(status or 0))
   os.remove(ARGS)
end

local function stub_args()
   local text = H.read(ARGS)
   if not text then
      return nil
   end
   local out = {}
   for word in string.gmatch(text, "([^%z]*)%z") do
      out[#out + 1] = word
   end
   return out
end

local function plan_site(overrides)
   local site = {
      ml_partitions = { "ml" },
      mode = "plan",
      plan_command = { "/bin/sh", STUB, "plan", "--for-sbatch" },
      plan_timeout_s = 10,
   }
   for k, v in pairs(overrides or {}) do
      site[k] = v
   end
   return site
end

local GOOD_REPLY = "# mlsub plan --for-sbatch\nnodelist=node1,node2\nnodes=2\nntasks=5\n"
   .. "comment=" .. TAG .. "\nmessage=decision 42: 3 workers, 2 PS\n"

-- --- not sbatch, not ML, tagged ------------------------------------------------------------

T["srun and salloc are never touched, even in an ML partition"] = function()
   for _, kind in ipairs({ "srun", "salloc" }) do
      local rc, writes, log = pre_submit({ type = kind, partition = "ml", argv = { "true" } })
      H.eq(rc, slurm.SUCCESS, kind)
      H.eq(H.count(writes), 0, "options written by " .. kind)
      H.eq(#log.info + #log.error, 0, "log lines of " .. kind)
   end
end

T["sbatch outside the ML partitions is not touched"] = function()
   local rc, writes, log = pre_submit(sbatch({ partition = "debug" }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "options written")
   H.eq(#log.info, 0, "log lines")
end

T["a tagged sbatch (mlsub's own) is not touched"] = function()
   local rc, writes, log = pre_submit(sbatch({ partition = "ml", comment = TAG }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "options written")
   H.eq(#log.info, 0, "log lines")
end

T["het components after the first are not touched"] = function()
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), nil, 1)
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes) + #log.info, 0, "writes and log lines")
end

T["mode off does nothing"] = function()
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), { ml_partitions = { "ml" }, mode = "off" })
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes) + #log.info, 0, "writes and log lines")
end

-- --- hints ----------------------------------------------------------------------------------

T["untagged sbatch in an ML partition gets the mlsub command as a hint"] = function()
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "options written")
   local text = said(log)
   H.contains(text, "mlsched: partition 'ml' is for ML training jobs placed by mlsub")
   H.contains(text, "and this job carries no mlsub decision tag")
   H.contains(text, "mlsub submit --partition ml /home/u/train.sh")
end

T["the hint names a malformed tag, quotes odd paths, and uses SCRIPT without a file"] = function()
   local _, _, log = pre_submit(sbatch({ partition = "ml", comment = "mlsched:decision=42", argv = { "/tmp/a b.sh" } }))
   H.contains(said(log), "this job's mlsub decision tag is malformed")
   H.contains(said(log), "mlsub submit --partition ml '/tmp/a b.sh'")
   local _, _, log2 = pre_submit(sbatch({ partition = "ml", argv = {} }))
   H.contains(said(log2), "mlsub submit --partition ml SCRIPT")
end

T["conventions and the default partition mark ML jobs"] = function()
   local _, _, log = pre_submit(sbatch({ ["job-name"] = "ml-resnet" }), { ml_job_name_patterns = { "^ml%-" } })
   H.contains(said(log), "the job name 'ml-resnet' marks an ML training job")
   H.contains(said(log), "mlsub submit /home/u/train.sh")
   local _, _, log2 = pre_submit(sbatch({ comment = "train:x" }), { ml_comment_patterns = { "^train:" } })
   H.contains(said(log2), "the job's comment marks an ML training job")
   local _, _, log3 = pre_submit(sbatch({}), { ml_partitions = { "ml" }, default_partition = "ml" })
   H.contains(said(log3), "mlsub submit --partition ml /home/u/train.sh")
   local _, _, log4 = pre_submit(sbatch({}), { ml_partitions = { "ml" }, default_partition = "debug" })
   H.eq(#log4.info, 0, "default partition debug")
end

-- --- mode "plan" ----------------------------------------------------------------------------

T["plan mode fills in the placement the command prints"] = function()
   stub(GOOD_REPLY, 0)
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), plan_site())
   H.eq(rc, slurm.SUCCESS, "rc")
   H.same(writes, { nodelist = "node1,node2", nodes = "2", ntasks = "5", comment = TAG }, "options written")
   H.contains(said(log), "placed by mlsub: nodes node1,node2, " .. TAG)
   H.contains(said(log), "decision 42: 3 workers, 2 PS")
   H.same(stub_args(), { "plan", "--for-sbatch", "--partition", "ml", "--name", "train", SCRIPT }, "arguments")
end

T["plan mode holds a job that waits in mlsub's queue"] = function()
   stub("nodelist=node3\nnodes=1\nntasks=4\nhold=1\ncomment=" .. TAG .. "\n", 0)
   local rc, writes = pre_submit(sbatch({ partition = "ml" }), plan_site())
   H.eq(rc, slurm.SUCCESS, "rc")
   H.same(writes, { nodelist = "node3", nodes = "1", ntasks = "4", hold = "set", comment = TAG }, "options written")
   stub("nodelist=node3\nhold=yes\ncomment=" .. TAG .. "\n", 0)
   local _, bad = pre_submit(sbatch({ partition = "ml" }), plan_site())
   H.eq(H.count(bad), 0, "a hold= value other than 1 is not trusted")
end

T["plan mode passes hostile values as single arguments, never to the shell"] = function()
   stub(GOOD_REPLY, 0)
   local marker = TMP .. "/INJECTED"
   os.remove(marker)
   local name = "x'; touch " .. marker .. "; echo '$(touch " .. marker .. ")`touch " .. marker .. "`\nline2"
   local script = TMP .. "/my job's $(touch " .. marker .. ").sh"
   local rc, writes = pre_submit(sbatch({ partition = "ml", ["job-name"] = name, argv = { script } }), plan_site())
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(writes.nodelist, "node1,node2", "nodelist")
   H.same(stub_args(), { "plan", "--for-sbatch", "--partition", "ml", "--name", name, script }, "arguments")
   H.eq(H.exists(marker), false, "a value was run by the shell")
end

T["plan mode keeps the user's comment next to the tag"] = function()
   stub(GOOD_REPLY, 0)
   local _, writes = pre_submit(sbatch({ ["job-name"] = "ml-x", comment = "team=a" }), plan_site({ ml_job_name_patterns = { "^ml%-" } }))
   H.eq(writes.comment, "team=a;" .. TAG, "comment")
   H.same(stub_args(), { "plan", "--for-sbatch", "--name", "ml-x", SCRIPT }, "arguments without a partition")
end

T["plan mode falls back to the hint when the command fails"] = function()
   stub(GOOD_REPLY, 3)
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), plan_site())
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "options written")
   H.contains(said(log), "did not place this job (it exited with status 3)")
   H.contains(said(log), "mlsub submit --partition ml /home/u/train.sh")
end

T["plan mode rejects output it cannot trust"] = function()
   local replies = {
      ["nodelist=node1;rm -rf /\ncomment=" .. TAG .. "\n"] = "bad nodelist",
      ["nodelist=node1\ncomment=mlsched:decision=42\n"] = "comment is not a decision tag",
      ["nodelist=node1\n"] = "no nodelist= or no comment=",
      ["comment=" .. TAG .. "\n"] = "no nodelist= or no comment=",
      ["nodelist=node1\nntasks=5x\ncomment=" .. TAG .. "\n"] = "bad ntasks",
      ["just some text\n"] = "unreadable line",
      [""] = "no nodelist= or no comment=",
   }
   for reply, problem in pairs(replies) do
      stub(reply, 0)
      local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), plan_site())
      H.eq(rc, slurm.SUCCESS, "rc for " .. reply)
      H.eq(H.count(writes), 0, "options written for " .. reply)
      H.contains(said(log), problem, reply)
   end
end

T["plan mode stops a command that hangs"] = function()
   stub(GOOD_REPLY, 0, "sleep 30")
   local started = os.time()
   local rc, writes, log = pre_submit(sbatch({ partition = "ml" }), plan_site({ plan_timeout_s = 1 }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "options written")
   if os.time() - started > 5 then
      error("the hanging command was not stopped after 1 s")
   end
   H.contains(said(log), "did not place this job (it exited with status 124)")
end

T["plan mode only hints for hetjob scripts, --wrap jobs and malformed tags"] = function()
   stub(GOOD_REPLY, 0)
   local het = TMP .. "/het.sh"
   H.write(het, "#!/bin/bash\n#SBATCH -w node1\n#SBATCH hetjob\n#SBATCH -w node2\ntrue\n")
   for label, fields in pairs({
      hetjob = sbatch({ partition = "ml", argv = { het } }),
      wrap = sbatch({ partition = "ml", argv = {} }),
      malformed = sbatch({ partition = "ml", comment = "mlsched:decision=1" }),
   }) do
      local _, writes, log = pre_submit(fields, plan_site())
      H.eq(H.count(writes), 0, "options written for " .. label)
      H.eq(stub_args(), nil, "the command ran for " .. label)
      H.contains(said(log), "submit it with mlsub", label)
   end
end

T["plan mode does nothing inside the plan command itself"] = function()
   stub(GOOD_REPLY, 0)
   local getenv = os.getenv
   os.getenv = function(name)
      if name == "MLSCHED_CLI_FILTER_ACTIVE" then
         return "1"
      end
      return getenv(name)
   end
   local ok, err = pcall(function()
      local _, writes, log = pre_submit(sbatch({ partition = "ml" }), plan_site())
      H.eq(H.count(writes) + #log.info, 0, "writes and log lines")
      H.eq(stub_args(), nil, "the command ran")
   end)
   os.getenv = getenv
   assert(ok, err)
end

T["parse_plan_output skips comments, blank lines, CRLF and unknown keys"] = function()
   local M = H.load(PLUGIN)
   local result = M.parse_plan_output("# hi\r\n\r\nnodelist=node[1-2]\r\nfuture_key=x\ncomment=" .. TAG .. "\r\nmlsched-exit=0\n")
   H.same(result.problems, {}, "problems")
   H.same(result.values, { nodelist = "node[1-2]", comment = TAG }, "values")
end

T["plan_shell_line quotes every word"] = function()
   local M = H.load(PLUGIN)
   local line = M.plan_shell_line({ "/bin/echo", "a'b", "$(x)" }, 5)
   H.contains(line, [['/bin/echo' 'a'\''b' '$(x)' </dev/null; printf]])
   H.contains(line, "MLSCHED_CLI_FILTER_ACTIVE=1 ")
   H.eq(M.plan_shell_line({ "/bin/echo", "a\0b" }, 5), nil, "a NUL byte")
end

-- --- the site table and failures ---------------------------------------------------------

T["the shipped site table is valid (hint mode, partition ml)"] = function()
   local M = H.load(PLUGIN)
   H.same(M.validate_site(M.site), {}, "problems")
   H.eq(M.site.mode, "hint", "mode")
   for _, name in ipairs({ "slurm_cli_setup_defaults", "slurm_cli_pre_submit", "slurm_cli_post_submit" }) do
      H.eq(type(_G[name]), "function", name)
   end
   H.eq(slurm_cli_setup_defaults(H.proxy({}), true), slurm.SUCCESS, "setup_defaults")
   H.eq(slurm_cli_post_submit(0, 12, 4294967294), slurm.SUCCESS, "post_submit")
end

T["validate_site names each bad setting"] = function()
   local M = H.load(PLUGIN)
   local problems = M.validate_site({
      mode = "auto",
      plan_command = { "mlsub", "plan" },
      plan_timeout_s = 0,
      default_partition = "a,b",
      ml_partitions = { 3 },
      submit_command = "x\ny",
   })
   local paths = {}
   for _, p in ipairs(problems) do
      paths[#paths + 1] = p.path
   end
   table.sort(paths)
   H.same(paths, { "default_partition", "ml_partitions[1]", "mode", "plan_command[1]", "plan_timeout_s", "submit_command" }, "paths")
   local plan_without_command = M.validate_site({ mode = "plan", plan_command = {} })
   H.eq(plan_without_command[1].path, "plan_command", "mode plan without a command")
end

T["a broken site table or an internal error never blocks sbatch"] = function()
   local _, log = H.load(PLUGIN, function(source)
      return (string.gsub(source, 'mode = "hint",', 'mode = "loud",', 1))
   end)
   local options, writes = H.proxy(sbatch({ partition = "ml" }))
   H.eq(slurm_cli_pre_submit(options, 0), slurm.SUCCESS, "broken site")
   H.eq(H.count(writes), 0, "options written")
   H.contains(said(log), "site table: mode")
   local _, log2 = H.load(PLUGIN)
   local exploding = setmetatable({}, {
      __index = function(_, key)
         if key == "type" then
            return "sbatch"
         end
         error("no option " .. key)
      end,
   })
   H.eq(slurm_cli_pre_submit(exploding, 0), slurm.SUCCESS, "internal error")
   H.contains(said(log2), "problem (ignored; the command goes on unchanged)")
   local weird = setmetatable({}, { __index = function() error("boom") end })
   H.eq(slurm_cli_pre_submit(weird, 0), slurm.SUCCESS, "options that cannot even say their type")
end

H.run(T, arg)
