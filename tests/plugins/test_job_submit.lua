--[[ Unit tests of plugins/job_submit.lua with a stubbed `slurm` table (Lua 5.1).

    lua5.1 tests/plugins/test_job_submit.lua ROOT [TEST NAME | --list]

Run by tests/plugins/test_lua_plugins.py, one pytest case per test here.
--]]

local ROOT = arg[1]
local H = dofile(ROOT .. "/tests/plugins/harness.lua")(ROOT)
local T = H.suite()
local PLUGIN = "plugins/job_submit.lua"

local TAG = "mlsched:decision=42:0123456789ab"
local PARTS = {
   debug = { name = "debug", flag_default = 1 },
   ml = { name = "ml", flag_default = 0 },
}

-- A batch job (sbatch script) with the given fields; argv[0] is the script, as Slurm passes it.
local function batch(fields)
   local job = { name = "train", script = "#!/bin/bash\ntrue\n", argv = { [0] = "/home/u/train.sh" } }
   for k, v in pairs(fields or {}) do
      job[k] = v
   end
   return job
end

local function submit(fields, part_list, uid)
   local M, log = H.load(PLUGIN)
   local job_desc, writes = H.proxy(fields)
   local rc = slurm_job_submit(job_desc, part_list or PARTS, uid or 1000)
   return rc, writes, log, M
end

local function the_message(log)
   H.eq(#log.user, 1, "messages to the user")
   return log.user[1]
end

-- --- ML partition ------------------------------------------------------------------------

T["untagged job in an ML partition is rejected with the exact mlsub command"] = function()
   local rc, writes, log = submit(batch({ partition = "ml" }))
   H.eq(rc, slurm.ERROR, "rc")
   local message = the_message(log)
   H.contains(message, "partition 'ml' is for ML training jobs placed by mlsub")
   H.contains(message, "carries no mlsub decision tag")
   H.contains(message, "\n    mlsub submit --partition ml /home/u/train.sh")
   H.lacks(message, "SCRIPT")
   H.eq(H.count(writes), 0, "fields written")
   H.eq(#log.error, 0, "errors logged")
end

T["a script path that needs quoting is shell-quoted in the command"] = function()
   local rc, _, log = submit(batch({ partition = "ml", argv = { [0] = "/home/u/my job's.sh" } }))
   H.eq(rc, slurm.ERROR, "rc")
   H.contains(the_message(log), [[mlsub submit --partition ml '/home/u/my job'\''s.sh']])
end

T["a --wrap job (no script file) gets a SCRIPT placeholder"] = function()
   local rc, _, log = submit({ name = "wrap", partition = "ml", script = "#!/bin/sh\ntrue\n" })
   H.eq(rc, slurm.ERROR, "rc")
   local message = the_message(log)
   H.contains(message, "mlsub submit --partition ml SCRIPT")
   H.contains(message, "SCRIPT: the job script")
end

T["an salloc/srun allocation (no script) in an ML partition is rejected too"] = function()
   local rc, _, log = submit({ name = "bash", partition = "ml", argv = { [0] = "bash" } })
   H.eq(rc, slurm.ERROR, "rc")
   H.contains(the_message(log), "mlsub submit --partition ml SCRIPT")
end

T["a partition list naming an ML partition counts as ML"] = function()
   local rc, _, log = submit(batch({ partition = "debug,ml" }))
   H.eq(rc, slurm.ERROR, "rc")
   H.contains(the_message(log), "--partition ml ")
end

T["a job naming no partition is judged by the default partition"] = function()
   local ml_default = {
      debug = { name = "debug", flag_default = 0 },
      ml = { name = "ml", flag_default = 1 },
   }
   local rc, _, log = submit(batch({}), ml_default)
   H.eq(rc, slurm.ERROR, "default partition ml")
   H.contains(the_message(log), "partition 'ml'")
   local rc2, writes2 = submit(batch({}), PARTS)
   H.eq(rc2, slurm.SUCCESS, "default partition debug")
   H.eq(H.count(writes2), 0, "fields written")
end

-- --- tagged jobs -------------------------------------------------------------------------

T["tagged job is accepted and annotated, its comment untouched"] = function()
   local rc, writes, log = submit(batch({ partition = "ml", comment = TAG }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.same(writes, { admin_comment = "mlsched:decision=42" }, "fields written")
   H.eq(#log.user, 0, "messages to the user")
   H.contains(log.info[#log.info], "accepted")
end

T["a tag inside a longer comment is found"] = function()
   local rc, writes = submit(batch({ partition = "ml", comment = "team=vision;" .. "mlsched:decision=7:00000000abcd" .. ";x" }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(writes.admin_comment, "mlsched:decision=7", "admin_comment")
end

T["an existing admin_comment is kept and the annotation added once"] = function()
   local rc, writes = submit(batch({ partition = "ml", comment = TAG, admin_comment = "ops:watch" }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(writes.admin_comment, "ops:watch;mlsched:decision=42", "admin_comment")
   local rc2, writes2 = submit(batch({ partition = "ml", comment = TAG, admin_comment = "ops:watch;mlsched:decision=42" }))
   H.eq(rc2, slurm.SUCCESS, "rc")
   H.eq(H.count(writes2), 0, "nothing written when already annotated")
end

T["tagged job in another partition is annotated (annotate_all_tagged)"] = function()
   local rc, writes = submit(batch({ partition = "debug", comment = TAG }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.same(writes, { admin_comment = "mlsched:decision=42" }, "fields written")
end

T["with annotate_all_tagged = false a tagged job elsewhere is untouched"] = function()
   local M = H.load(PLUGIN)
   M.site = { ml_partitions = { "ml" }, annotate_all_tagged = false }
   local job_desc, writes = H.proxy(batch({ partition = "debug", comment = TAG }))
   H.eq(slurm_job_submit(job_desc, PARTS, 1000), slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "fields written")
end

T["het components: each is judged alone; the tag sbatch copies to every component is honoured"] = function()
   -- Slurm 22.05: component 0 carries --partition, components 1.. name none (they run
   -- in the default partition) unless their own #SBATCH line repeats it; the comment of
   -- the first component is copied to all.
   local rc0, w0 = submit(batch({ partition = "ml", comment = TAG, het_job_offset = 0 }))
   local rc1, w1 = submit(batch({ comment = TAG, het_job_offset = 1 }))
   local rc2, w2 = submit(batch({ partition = "ml", comment = TAG, het_job_offset = 2 }))
   H.eq(rc0, slurm.SUCCESS, "component 0")
   H.eq(rc1, slurm.SUCCESS, "component 1")
   H.eq(rc2, slurm.SUCCESS, "component 2")
   for i, w in ipairs({ w0, w1, w2 }) do
      H.eq(w.admin_comment, "mlsched:decision=42", "admin_comment of component " .. (i - 1))
   end
   local rc3 = submit(batch({ partition = "ml", het_job_offset = 1 }))
   H.eq(rc3, slurm.ERROR, "an untagged component in the ML partition")
end

-- --- everything else ---------------------------------------------------------------------

T["untagged job in another partition is untouched"] = function()
   local rc, writes, log = submit(batch({ partition = "debug", comment = "my note" }))
   H.eq(rc, slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "fields written")
   H.eq(#log.user + #log.error, 0, "messages and errors")
   H.eq(#log.info, 1, "log lines (the one written when the plugin loaded)")
end

T["nil fields everywhere pass untouched"] = function()
   for i, part_list in ipairs({ PARTS, {}, nil, { odd = {} } }) do
      local rc, writes, log = submit({}, part_list)
      H.eq(rc, slurm.SUCCESS, "rc " .. i)
      H.eq(H.count(writes), 0, "fields written " .. i)
      H.eq(#log.error, 0, "errors " .. i)
   end
   local rc, writes = submit({ partition = "", comment = "", name = "" }, {})
   H.eq(rc, slurm.SUCCESS, "empty strings")
   H.eq(H.count(writes), 0, "fields written")
end

T["exempt uids are not rejected"] = function()
   local M = H.load(PLUGIN)
   M.site = { ml_partitions = { "ml" }, exempt_uids = { 0, 1000 } }
   local job_desc, writes = H.proxy(batch({ partition = "ml" }))
   H.eq(slurm_job_submit(job_desc, PARTS, 1000), slurm.SUCCESS, "exempt")
   H.eq(H.count(writes), 0, "fields written")
   H.eq(slurm_job_submit(H.proxy(batch({ partition = "ml" })), PARTS, 1001), slurm.ERROR, "not exempt")
end

-- --- conventions -------------------------------------------------------------------------

T["job-name convention marks ML jobs in any partition"] = function()
   local M, log = H.load(PLUGIN)
   M.site = { ml_partitions = {}, ml_job_name_patterns = { "^ml[-_]" } }
   H.eq(slurm_job_submit(H.proxy(batch({ name = "ml-resnet" })), PARTS, 1000), slurm.ERROR, "name ml-resnet")
   local message = log.user[1]
   H.contains(message, "the job name 'ml-resnet' marks an ML training job (site convention '^ml[-_]')")
   H.contains(message, "mlsub submit /home/u/train.sh") -- no partition named, none guessed
   H.eq(slurm_job_submit(H.proxy(batch({ name = "ml_x", partition = "gpu" })), PARTS, 1000), slurm.ERROR, "ml_x")
   H.contains(log.user[2], "mlsub submit --partition gpu /home/u/train.sh")
   H.eq(slurm_job_submit(H.proxy(batch({ name = "html-report" })), PARTS, 1000), slurm.SUCCESS, "html-report")
   H.eq(slurm_job_submit(H.proxy(batch({ name = "ml-tagged", comment = TAG })), PARTS, 1000), slurm.SUCCESS, "tagged")
end

T["comment convention marks ML jobs"] = function()
   local M, log = H.load(PLUGIN)
   M.site = { ml_comment_patterns = { "^train:" } }
   H.eq(slurm_job_submit(H.proxy(batch({ comment = "train:resnet" })), PARTS, 1000), slurm.ERROR, "train:resnet")
   H.contains(log.user[1], "the job's comment marks an ML training job (site convention '^train:')")
   H.eq(slurm_job_submit(H.proxy(batch({ comment = "train:resnet;" .. TAG })), PARTS, 1000), slurm.SUCCESS, "tagged")
   H.eq(slurm_job_submit(H.proxy(batch({ comment = "eval:resnet" })), PARTS, 1000), slurm.SUCCESS, "eval")
end

T["a '%' in a job name does not break the message"] = function()
   local M, log = H.load(PLUGIN)
   M.site = { ml_job_name_patterns = { "^ml" } }
   H.eq(slurm_job_submit(H.proxy(batch({ name = "ml 100%d" })), PARTS, 1000), slurm.ERROR, "rc")
   H.contains(log.user[1], "'ml 100%d'")
   H.eq(#log.error, 0, "errors")
end

-- --- malformed tags ----------------------------------------------------------------------

local MALFORMED = {
   "mlsched:decision=42", -- no token (what mlsub wrote before the token existed)
   "mlsched:decision=it-1",
   "mlsched:decision=abc:0123456789ab", -- id not decimal
   "mlsched:decision=42:0123456789a", -- 11 digits
   "mlsched:decision=42:0123456789abc", -- 13 digits
   "mlsched:decision=42:0123456789AB", -- upper case
   "mlsched:decision=42:0123456789ag", -- not hex
   "mlsched:decision=42:0123456789abCD", -- 12 lowercase digits, then more hex digits
   "mlsched:decision=:0123456789ab",
   "mlsched:decision=42:0123456789ab;mlsched:decision=43:0123456789ab", -- two decisions
}

T["malformed tags in an ML partition are rejected and named"] = function()
   for _, comment in ipairs(MALFORMED) do
      local rc, writes, log = submit(batch({ partition = "ml", comment = comment }))
      H.eq(rc, slurm.ERROR, comment)
      local message = the_message(log)
      H.contains(message, "malformed mlsub decision tag", comment)
      H.contains(message, "mlsub submit --partition ml /home/u/train.sh", comment)
      H.eq(H.count(writes), 0, "fields written for " .. comment)
   end
end

T["malformed tags elsewhere pass untouched"] = function()
   for _, comment in ipairs(MALFORMED) do
      local rc, writes, log = submit(batch({ partition = "debug", comment = comment }))
      H.eq(rc, slurm.SUCCESS, comment)
      H.eq(H.count(writes), 0, "fields written for " .. comment)
      H.eq(#log.user, 0, "messages for " .. comment)
   end
end

T["parse_tag reads well-formed tags"] = function()
   local M = H.load(PLUGIN)
   H.same(M.parse_tag(TAG), { status = "ok", id = "42", token = "0123456789ab" }, "plain")
   H.same(M.parse_tag(TAG .. " " .. TAG), { status = "ok", id = "42", token = "0123456789ab" }, "twice, same")
   H.same(M.parse_tag("x mlsched:decision=1:ffffffffffff."), { status = "ok", id = "1", token = "ffffffffffff" }, "punctuation after")
   H.same(M.parse_tag("mlsched:decision=1:ffffffffffff_x"), { status = "ok", id = "1", token = "ffffffffffff" }, "a non-hex word character after")
   H.same(M.parse_tag(nil), { status = "none" }, "nil")
   H.same(M.parse_tag("hello"), { status = "none" }, "no tag")
   H.eq(M.parse_tag("mlsched:decision=42").status, "malformed", "no token")
end

-- --- modify ------------------------------------------------------------------------------

T["moving an untagged job into an ML partition is refused"] = function()
   local _, log = H.load(PLUGIN)
   local job_rec = { comment = nil, partition = "debug" }
   H.eq(slurm_job_modify(H.proxy({ partition = "ml" }), job_rec, PARTS, 1000), slurm.ERROR, "untagged")
   H.contains(log.user[1], "cannot move there")
   H.eq(slurm_job_modify(H.proxy({ partition = "ml" }), { comment = TAG }, PARTS, 1000), slurm.SUCCESS, "tagged job")
   H.eq(slurm_job_modify(H.proxy({ partition = "ml", comment = TAG }), {}, PARTS, 1000), slurm.SUCCESS, "tag in the update")
   H.eq(slurm_job_modify(H.proxy({ time_limit = 5 }), {}, PARTS, 1000), slurm.SUCCESS, "no partition change")
   H.eq(slurm_job_modify(H.proxy({ partition = "debug" }), {}, PARTS, 1000), slurm.SUCCESS, "to debug")
end

-- --- the site table and failures ---------------------------------------------------------

T["the shipped site table is valid and marks partition ml"] = function()
   local M, log = H.load(PLUGIN)
   H.same(M.validate_site(M.site), {}, "problems")
   H.same(M.site.ml_partitions, { "ml" }, "ml_partitions")
   H.contains(log.info[1], "job_submit.lua loaded (ML partitions: ml)")
   H.eq(type(slurm_job_submit), "function", "slurm_job_submit")
   H.eq(type(slurm_job_modify), "function", "slurm_job_modify")
end

T["validate_site names each bad setting"] = function()
   local M = H.load(PLUGIN)
   local problems = M.validate_site({
      ml_partitions = { "ml", "", "a b" },
      ml_job_name_patterns = "^ml",
      ml_comment_patterns = { "(" },
      exempt_uids = { -1, 1.5 },
      annotate_all_tagged = "yes",
      submit_command = "",
      help = "a\nb",
      ml_partition = { "typo" },
   })
   local paths = {}
   for _, p in ipairs(problems) do
      paths[#paths + 1] = p.path
   end
   table.sort(paths)
   H.same(paths, {
      "annotate_all_tagged", "exempt_uids[1]", "exempt_uids[2]", "help", "ml_comment_patterns[1]",
      "ml_job_name_patterns", "ml_partition", "ml_partitions[2]", "ml_partitions[3]", "submit_command",
   }, "paths")
   H.same(M.validate_site(nil), { { path = "SITE", message = "must be a table" } }, "nil")
   H.same(M.validate_site({}), {}, "an empty table (all defaults)")
end

T["a broken site table lets every job through and logs why"] = function()
   local _, log = H.load(PLUGIN, function(source)
      return (string.gsub(source, 'ml_partitions = { "ml" },', 'ml_partitions = "ml",', 1))
   end)
   H.contains(log.error[1], "site table: ml_partitions: must be a list")
   local job_desc, writes = H.proxy(batch({ partition = "ml" }))
   H.eq(slurm_job_submit(job_desc, PARTS, 1000), slurm.SUCCESS, "rc")
   H.eq(H.count(writes), 0, "fields written")
   H.contains(log.error[#log.error], "every job passes untouched")
end

T["an internal error lets the job through and is logged"] = function()
   local _, log = H.load(PLUGIN)
   local exploding = setmetatable({}, {
      __index = function(_, key)
         error("no field " .. key)
      end,
   })
   H.eq(slurm_job_submit(exploding, PARTS, 1000), slurm.SUCCESS, "rc")
   H.contains(log.error[1], "internal error, the job passes untouched")
   H.eq(slurm_job_modify(exploding, {}, PARTS, 1000), slurm.SUCCESS, "modify rc")
end

H.run(T, arg)
