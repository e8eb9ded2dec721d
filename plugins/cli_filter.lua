--[[ mlsched cli_filter/lua plugin: points plain sbatch users at mlsub (advisory).

Runs on the client, inside every sbatch, salloc and srun (CliFilterPlugins=cli_filter/lua,
/etc/slurm/cli_filter.lua), also for every srun inside a job. Lua 5.1, the version
Debian's Slurm links. It only ever acts on sbatch, and never blocks anything: every
problem is logged and the command goes on unchanged (users can bypass a cli_filter
anyway; the job_submit plugin is what enforces).

For an sbatch job that counts as ML training (SITE below: partition, job name, --comment)
and carries no mlsub decision tag (--comment=mlsched:decision=<ID>:<TOKEN>):
  * mode "hint": print the mlsub command that submits it properly;
  * mode "plan": run SITE.plan_command (`mlsub plan --for-sbatch`) with the job's
    partition, name and script, and fill in the placement it prints (nodelist, nodes,
    ntasks, begin or hold, comment = the decision tag; hold: the job waits held in
    mlsub's queue until a re-plan sets its nodes and releases it). If the command fails,
    times out or prints something unusable, fall back to the hint. The command line is built from
    the argv list below with every word in single quotes: no value is ever pasted into
    a shell string unquoted.
Its output contract (lines KEY=VALUE) is in docs/admin-plugins.md.
Check an edited copy before installing it:   mlsub plugins check cli_filter.lua
--]]

-- >>> site table: edit here; `mlsub plugins check FILE` validates it >>>
local SITE = {
   -- Partitions whose jobs count as ML training (exact names). Keep in step with
   -- job_submit.lua on the controller.
   ml_partitions = { "ml" },
   -- Lua patterns: a job whose name matches one counts as ML training, e.g. "^ml[-_]".
   ml_job_name_patterns = {},
   -- Lua patterns: a job whose --comment matches one counts as ML training.
   ml_comment_patterns = {},
   -- The cluster's default partition (where a job without --partition runs); "" = unknown.
   default_partition = "",
   -- "hint": print how to submit with mlsub; "plan": run plan_command and fill in the
   -- placement; "off": do nothing.
   mode = "hint",
   -- mode "plan": the command (an argv list, absolute path first); the filter appends
   -- [--partition P] [--name NAME] SCRIPT.
   plan_command = { "/usr/local/bin/mlsub", "plan", "--for-sbatch" },
   -- mode "plan": seconds before the command is stopped (then the hint is printed).
   plan_timeout_s = 30,
   -- The command the hint tells users to run (--partition and script follow).
   submit_command = "mlsub submit",
}
-- <<< site table <<<

local M = { site = SITE }
-- A global, so that `mlsub plugins check` and the unit tests can reach the functions.
mlsched_cli_filter = M

-- Set in the environment of plan_command: a filter running inside it does nothing.
M.GUARD_ENV = "MLSCHED_CLI_FILTER_ACTIVE"
M.TIMEOUT_PROGRAMS = { "/usr/bin/timeout", "/bin/timeout" }
M.PLAN_KEYS = { nodelist = true, nodes = true, ntasks = true, begin = true, hold = true, comment = true, message = true }

local DEFAULTS = {
   ml_partitions = {},
   ml_job_name_patterns = {},
   ml_comment_patterns = {},
   default_partition = "",
   mode = "hint",
   plan_command = {},
   plan_timeout_s = 30,
   submit_command = "mlsub submit",
}
local MODES = { hint = true, plan = true, off = true }

-- --- helpers ---------------------------------------------------------------------------

local function contains(list, value)
   for _, item in ipairs(list) do
      if item == value then
         return true
      end
   end
   return false
end

local function is_list(value)
   if type(value) ~= "table" then
      return false
   end
   local n = 0
   for _ in pairs(value) do
      n = n + 1
   end
   return n == #value
end

--- A word as a POSIX shell reads it back: always single-quoted (nil if it holds a NUL byte,
--- which no argument can carry).
function M.sh_quote(word)
   word = tostring(word)
   if string.find(word, "\0", 1, true) then
      return nil
   end
   return "'" .. string.gsub(word, "'", "'\\''") .. "'"
end

--- The same, but plain words stay bare (for messages meant to be pasted).
function M.shell_word(word)
   if word ~= "" and not string.find(word, "[^%w@%%+=:,%./_%-]") then
      return word
   end
   return M.sh_quote(word)
end

local function info(fmt, ...)
   slurm.log_info("%s", "mlsched: " .. string.format(fmt, ...))
end

-- --- the decision tag (same rules as job_submit.lua) -------------------------------------

function M.tag_status(comment)
   if type(comment) ~= "string" or not string.find(comment, "mlsched:decision", 1, true) then
      return "none"
   end
   -- as job_submit.lua's parse_tag: a valid tag counts wherever it is; two different
   -- valid tags (which decision is this job?) are malformed
   local found
   for id, token in string.gmatch(comment, "mlsched:decision=(%d+):(%x+)") do
      if #token == 12 and not string.find(token, "%u") then
         local tag = tonumber(id) .. ":" .. token
         if found and found ~= tag then
            return "malformed"
         end
         found = tag
      end
   end
   return found and "ok" or "malformed"
end

local function is_whole_tag(value)
   local id, token = string.match(value, "^mlsched:decision=(%d+):(%x+)$")
   return id ~= nil and #token == 12 and not string.find(token, "%u")
end

-- --- the site table --------------------------------------------------------------------

local function check_strings(errors, site, key, check_one)
   local value = site[key]
   if value == nil then
      return
   end
   if not is_list(value) then
      errors[#errors + 1] = { path = key, message = "must be a list of strings, e.g. { \"a\", \"b\" }" }
      return
   end
   for i, item in ipairs(value) do
      local path = string.format("%s[%d]", key, i)
      if type(item) ~= "string" or item == "" then
         errors[#errors + 1] = { path = path, message = "must be a non-empty string, got " .. tostring(item) }
      elseif check_one then
         local problem = check_one(item, i)
         if problem then
            errors[#errors + 1] = { path = path, message = problem }
         end
      end
   end
end

local function partition_name_problem(name)
   if not string.find(name, "^[%w%._%-]+$") then
      return string.format("%q is not a partition name (letters, digits, '.', '_', '-')", name)
   end
end

local function pattern_problem(pattern)
   local ok, err = pcall(string.find, "", pattern)
   if not ok then
      return string.format("%q is not a valid Lua pattern: %s", pattern, tostring(err))
   end
end

local function command_word_problem(word, i)
   if string.find(word, "%z") then
      return "must not contain a NUL byte"
   end
   if i == 1 and string.sub(word, 1, 1) ~= "/" then
      return string.format("%q: the program must be an absolute path (sbatch's PATH is the user's)", word)
   end
end

--- The problems of a site table: a list of {path = "mode", message = "..."}.
function M.validate_site(site)
   if type(site) ~= "table" then
      return { { path = "SITE", message = "must be a table" } }
   end
   local errors = {}
   for key in pairs(site) do
      if DEFAULTS[key] == nil then
         local known = {}
         for k in pairs(DEFAULTS) do
            known[#known + 1] = k
         end
         table.sort(known)
         errors[#errors + 1] = {
            path = tostring(key),
            message = "unknown setting (known: " .. table.concat(known, ", ") .. ")",
         }
      end
   end
   check_strings(errors, site, "ml_partitions", partition_name_problem)
   check_strings(errors, site, "ml_job_name_patterns", pattern_problem)
   check_strings(errors, site, "ml_comment_patterns", pattern_problem)
   check_strings(errors, site, "plan_command", command_word_problem)
   local default = site.default_partition
   if default ~= nil and (type(default) ~= "string" or (default ~= "" and partition_name_problem(default))) then
      errors[#errors + 1] = { path = "default_partition", message = "must be a partition name, or \"\"" }
   end
   if site.mode ~= nil and not MODES[site.mode] then
      errors[#errors + 1] = { path = "mode", message = "must be \"hint\", \"plan\" or \"off\", got " .. tostring(site.mode) }
   end
   if site.mode == "plan" and (not is_list(site.plan_command) or #site.plan_command == 0) then
      errors[#errors + 1] = { path = "plan_command", message = "mode \"plan\" needs the command, e.g. { \"/usr/local/bin/mlsub\", \"plan\", \"--for-sbatch\" }" }
   end
   local timeout = site.plan_timeout_s
   if timeout ~= nil and (type(timeout) ~= "number" or timeout <= 0 or timeout > 600) then
      errors[#errors + 1] = { path = "plan_timeout_s", message = "must be a number of seconds in (0, 600]" }
   end
   local command = site.submit_command
   if command ~= nil and (type(command) ~= "string" or not string.find(command, "%S") or string.find(command, "%c")) then
      errors[#errors + 1] = { path = "submit_command", message = "must be a non-empty one-line string, e.g. \"mlsub submit\"" }
   end
   return errors
end

function M.with_defaults(site)
   local out = {}
   for key, value in pairs(DEFAULTS) do
      if site[key] == nil then
         out[key] = value
      else
         out[key] = site[key]
      end
   end
   return out
end

-- --- what counts as ML training --------------------------------------------------------

--- Why this sbatch counts as ML training (a sentence) and the partition to name, or nil.
function M.ml_reason(site, options)
   local requested = options.partition
   if type(requested) ~= "string" or requested == "" then
      requested = site.default_partition
   end
   local explicit = nil
   for name in string.gmatch(requested or "", "[^,%s]+") do
      explicit = explicit or name
      if contains(site.ml_partitions, name) then
         return string.format("partition '%s' is for ML training jobs placed by mlsub", name), name
      end
   end
   local job_name = options["job-name"]
   if type(job_name) == "string" then
      for _, pattern in ipairs(site.ml_job_name_patterns) do
         if string.find(job_name, pattern) then
            return string.format("the job name '%s' marks an ML training job", job_name), explicit
         end
      end
   end
   local comment = options.comment
   if type(comment) == "string" then
      for _, pattern in ipairs(site.ml_comment_patterns) do
         if string.find(comment, pattern) then
            return "the job's comment marks an ML training job", explicit
         end
      end
   end
   return nil
end

--- The job script sbatch was given (nil for --wrap or a script on stdin).
function M.script_path(options)
   local argv = options.argv
   if type(argv) ~= "table" then
      return nil
   end
   local path = argv[1]
   if type(path) ~= "string" or path == "" then
      return nil
   end
   return path
end

--- True when the script is a heterogeneous job (#SBATCH hetjob / packjob): mlsub's plan
--- fills one component, so such scripts only get the hint.
function M.is_hetjob_script(path)
   local file = io.open(path, "r")
   if not file then
      return false
   end
   local found = false
   for line in file:lines() do
      if string.find(line, "^#SBATCH%s+hetjob") or string.find(line, "^#SBATCH%s+packjob") then
         found = true
         break
      end
   end
   file:close()
   return found
end

function M.hint(site, reason, tag, partition, script)
   local words = { site.submit_command }
   if partition then
      words[#words + 1] = "--partition " .. M.shell_word(partition)
   end
   words[#words + 1] = script and M.shell_word(script) or "SCRIPT"
   local why = tag == "malformed" and "this job's mlsub decision tag is malformed"
      or "this job carries no mlsub decision tag"
   return {
      string.format("%s, and %s (a controller running mlsched's job_submit plugin refuses it).", reason, why),
      "submit it with mlsub, which places the workers and parameter servers: " .. table.concat(words, " "),
   }
end

-- --- mode "plan" -------------------------------------------------------------------------

local function timeout_program()
   for _, path in ipairs(M.TIMEOUT_PROGRAMS) do
      local file = io.open(path, "r")
      if file then
         file:close()
         return path
      end
   end
   return nil
end

--- The argv of the plan command for this job.
function M.plan_argv(site, partition, job_name, script)
   local argv = {}
   for _, word in ipairs(site.plan_command) do
      argv[#argv + 1] = word
   end
   if partition then
      argv[#argv + 1] = "--partition"
      argv[#argv + 1] = partition
   end
   if type(job_name) == "string" and job_name ~= "" then
      argv[#argv + 1] = "--name"
      argv[#argv + 1] = job_name
   end
   argv[#argv + 1] = script
   return argv
end

--- The shell line that runs argv (every word single-quoted, stdin from /dev/null, at most
--- timeout_s seconds) and then prints its exit status as "mlsched-exit=N"; nil when a word
--- cannot be passed.
function M.plan_shell_line(argv, timeout_s)
   local words = { M.GUARD_ENV .. "=1" }
   local timeout = timeout_program()
   if timeout then -- TERM after timeout_s, KILL 2 s later (the whole process group)
      words[#words + 1] = M.sh_quote(timeout)
      words[#words + 1] = "-k 2"
      words[#words + 1] = M.sh_quote(string.format("%d", math.ceil(timeout_s)))
   end
   for _, word in ipairs(argv) do
      local quoted = M.sh_quote(word)
      if not quoted then
         return nil
      end
      words[#words + 1] = quoted
   end
   return table.concat(words, " ") .. " </dev/null; printf '\\nmlsched-exit=%d\\n' \"$?\""
end

local VALUE_RULES = {
   nodelist = "^[%w%._%-,%[%]]+$",
   nodes = "^%d+$",
   ntasks = "^%d+$",
   begin = "^[%w:%-%+]+$",
   hold = "^1$",
}

--- Read what the plan command printed: {exit = N, values = {...}, problems = {...}}.
function M.parse_plan_output(text)
   local result = { exit = nil, values = {}, problems = {} }
   for line in string.gmatch(text or "", "[^\n]+") do
      line = string.gsub(line, "\r$", "")
      local key, value = string.match(line, "^([%w_%-]+)=(.*)$")
      if key == "mlsched-exit" then
         result.exit = tonumber(value)
      elseif string.find(line, "^%s*#") or not string.find(line, "%S") then
         -- a comment or a blank line
      elseif not key then
         result.problems[#result.problems + 1] = "unreadable line: " .. line
      elseif not M.PLAN_KEYS[key] then
         -- a key this filter does not know (a newer mlsub): ignored
      elseif key == "message" then
         result.values.message = string.gsub(value, "%c", " ")
      elseif key == "comment" and not is_whole_tag(value) then
         result.problems[#result.problems + 1] = "comment is not a decision tag: " .. value
      elseif VALUE_RULES[key] and not string.find(value, VALUE_RULES[key]) then
         result.problems[#result.problems + 1] = string.format("bad %s: %s", key, value)
      else
         result.values[key] = value
      end
   end
   if result.exit == nil then
      result.problems[#result.problems + 1] = "the command did not finish"
   elseif result.exit ~= 0 then
      result.problems[#result.problems + 1] = string.format("it exited with status %d", result.exit)
   end
   if #result.problems == 0 and (not result.values.nodelist or not result.values.comment) then
      result.problems[#result.problems + 1] = "it printed no nodelist= or no comment= line"
   end
   return result
end

--- Run the plan command; the parsed result (see parse_plan_output).
function M.run_plan(site, argv)
   local line = M.plan_shell_line(argv, site.plan_timeout_s)
   if not line then
      return { values = {}, problems = { "an argument holds a NUL byte" } }
   end
   local pipe, err = io.popen(line, "r")
   if not pipe then
      return { values = {}, problems = { "cannot start it: " .. tostring(err) } }
   end
   local text = pipe:read("*a")
   pipe:close()
   return M.parse_plan_output(text)
end

--- Fill the plan into the sbatch options (the comment keeps what the user wrote).
function M.apply_plan(options, values)
   for _, key in ipairs({ "nodelist", "nodes", "ntasks", "begin" }) do
      if values[key] then
         options[key] = values[key]
      end
   end
   if values.hold then
      -- the job cannot start now: it waits held in mlsub's queue, holding nothing, until
      -- a re-plan (`mlsub replan`: slurmctld's epilog) sets its nodes and releases it
      options.hold = "set"
   end
   local comment = options.comment
   if type(comment) == "string" and comment ~= "" then
      options.comment = comment .. ";" .. values.comment
   else
      options.comment = values.comment
   end
end

-- --- the hook ----------------------------------------------------------------------------

function M.pre_submit(site, options, offset)
   site = M.with_defaults(site)
   if site.mode == "off" or options.type ~= "sbatch" or offset ~= 0 or os.getenv(M.GUARD_ENV) then
      return
   end
   local reason, partition = M.ml_reason(site, options)
   if not reason then
      return
   end
   local tag = M.tag_status(options.comment)
   if tag == "ok" then
      return
   end
   local script = M.script_path(options)
   if site.mode == "plan" and tag == "none" and script and not M.is_hetjob_script(script) then
      local result = M.run_plan(site, M.plan_argv(site, partition, options["job-name"], script))
      if #result.problems == 0 then
         M.apply_plan(options, result.values)
         info("placed by mlsub: nodes %s, %s", result.values.nodelist, result.values.comment)
         if result.values.message then
            info("%s", result.values.message)
         end
         return
      end
      info("%s did not place this job (%s); submitting it unchanged", site.plan_command[1], table.concat(result.problems, "; "))
   end
   for _, line in ipairs(M.hint(site, reason, tag, partition, script)) do
      info("%s", line)
   end
end

M.site_errors = M.validate_site(SITE)

local function guarded(fn, ...)
   if #M.site_errors > 0 then
      local e = M.site_errors[1]
      info("cli_filter.lua site table: %s: %s (ignored; run mlsub plugins check)", e.path, e.message)
      return slurm.SUCCESS
   end
   local ok, err = pcall(fn, M.site, ...)
   if not ok then
      info("cli_filter.lua problem (ignored; the command goes on unchanged): %s", tostring(err))
   end
   return slurm.SUCCESS
end

function slurm_cli_setup_defaults(options, early_pass)
   return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
   local ok, kind = pcall(function()
      return options.type
   end)
   if not ok or kind ~= "sbatch" then
      return slurm.SUCCESS -- srun (also inside jobs) and salloc: nothing to do
   end
   return guarded(M.pre_submit, options, offset)
end

function slurm_cli_post_submit(offset, job_id, step_id)
   return slurm.SUCCESS
end

return slurm.SUCCESS
