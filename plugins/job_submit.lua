--[[ mlsched job_submit/lua plugin: ties plain sbatch use to mlsub.

Runs inside slurmctld (JobSubmitPlugins=lua, /etc/slurm/job_submit.lua) for every job
submission, and once per component of a heterogeneous job. Lua 5.1, the version Debian's
Slurm links. It never calls Python, a database or the network.

  * A job that counts as ML training (SITE below: its partition, its job name or its
    --comment) must carry the decision tag mlsub writes into every job it submits:
        --comment=mlsched:decision=<ID>:<TOKEN>   (ID decimal, TOKEN 12 lowercase hex)
    Without one (or with a malformed one) it is rejected, and the message tells the user
    the exact mlsub command to submit it with.
  * A job with a well-formed tag is accepted and annotated: its admin_comment gets
    "mlsched:decision=<ID>", which `sacct -o AdminComment` shows, so accounting rows join
    mlsub's decision history.
  * Every other job passes untouched.

Failure policy: a broken SITE table or an internal error never stops slurmctld and never
rejects a job: it is logged to slurmctld.log ("mlsched:") and the job passes untouched.
A Lua syntax error cannot be caught here (slurmctld refuses to start), so check an edited
copy before installing it:   mlsub plugins check job_submit.lua
Install, the field contract and rollback: docs/admin-plugins.md.
--]]

-- >>> site table: edit here; `mlsub plugins check FILE` validates it >>>
local SITE = {
   -- Partitions whose jobs count as ML training (exact names).
   ml_partitions = { "ml" },
   -- Lua patterns: a job whose name matches one counts as ML training, e.g. "^ml[-_]".
   ml_job_name_patterns = {},
   -- Lua patterns: a job whose --comment matches one counts as ML training, e.g. "^train:".
   ml_comment_patterns = {},
   -- Numeric uids whose jobs are never rejected (tagged ones are still annotated).
   exempt_uids = {},
   -- Annotate tagged jobs in every partition (true), or only jobs that count as ML (false).
   annotate_all_tagged = true,
   -- The command the rejection message tells users to run (--partition and script follow).
   submit_command = "mlsub submit",
   -- One more line for the rejection message (e.g. where your documentation is); "" for none.
   help = "",
}
-- <<< site table <<<

local M = { site = SITE }
-- A global, so that `mlsub plugins check` and the unit tests can reach the functions.
mlsched_job_submit = M

M.TAG_PATTERN = "mlsched:decision=(%d+):(%x+)"
M.TOKEN_LENGTH = 12
M.ANNOTATION_PREFIX = "mlsched:decision="

local DEFAULTS = {
   ml_partitions = {},
   ml_job_name_patterns = {},
   ml_comment_patterns = {},
   exempt_uids = {},
   annotate_all_tagged = true,
   submit_command = "mlsub submit",
   help = "",
}

-- --- the decision tag ----------------------------------------------------------------

--- The decision tag in a comment, as a table:
--- {status = "none"} | {status = "ok", id = "42", token = "0123456789ab"} |
--- {status = "malformed", text = "mlsched:decision=42:XYZ", problem = "..."}.
function M.parse_tag(comment)
   if type(comment) ~= "string" or not string.find(comment, "mlsched:decision", 1, true) then
      return { status = "none" }
   end
   local found, problem
   -- %x+ takes the whole run of hex digits: a token is exactly 12, all lowercase (so 12
   -- lowercase hex digits followed by another hex digit of either case are no tag).
   for id, token in string.gmatch(comment, M.TAG_PATTERN) do
      if #token ~= M.TOKEN_LENGTH or string.find(token, "%u") then
         problem = "the token must be exactly 12 lowercase hex digits"
      elseif found and (tonumber(found.id) ~= tonumber(id) or found.token ~= token) then
         return {
            status = "malformed",
            text = comment,
            problem = "it holds two different decision tags",
         }
      else
         found = { status = "ok", id = id, token = token }
      end
   end
   if found then
      return found
   end
   return {
      status = "malformed",
      text = string.match(comment, "mlsched:decision[^%s;,]*") or comment,
      problem = problem or "expected mlsched:decision=<ID>:<TOKEN>, ID decimal, TOKEN 12 lowercase hex digits",
   }
end

-- --- the site table ------------------------------------------------------------------

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
      else
         local problem = check_one(item)
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

--- The problems of a site table: a list of {path = "ml_partitions[2]", message = "..."}.
function M.validate_site(site)
   local errors = {}
   if type(site) ~= "table" then
      return { { path = "SITE", message = "must be a table" } }
   end
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
   local uids = site.exempt_uids
   if uids ~= nil then
      if not is_list(uids) then
         errors[#errors + 1] = { path = "exempt_uids", message = "must be a list of numeric uids" }
      else
         for i, uid in ipairs(uids) do
            if type(uid) ~= "number" or uid < 0 or math.floor(uid) ~= uid then
               errors[#errors + 1] = {
                  path = string.format("exempt_uids[%d]", i),
                  message = "must be a non-negative integer uid, got " .. tostring(uid),
               }
            end
         end
      end
   end
   if site.annotate_all_tagged ~= nil and type(site.annotate_all_tagged) ~= "boolean" then
      errors[#errors + 1] = { path = "annotate_all_tagged", message = "must be true or false" }
   end
   local command = site.submit_command
   if command ~= nil and (type(command) ~= "string" or not string.find(command, "%S") or string.find(command, "[%c]")) then
      errors[#errors + 1] = {
         path = "submit_command",
         message = "must be a non-empty one-line string, e.g. \"mlsub submit\"",
      }
   end
   if site.help ~= nil and (type(site.help) ~= "string" or string.find(site.help, "[\r\n]")) then
      errors[#errors + 1] = { path = "help", message = "must be a one-line string (\"\" for none)" }
   end
   return errors
end

--- The site table with every missing setting at its default.
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

local function contains(list, value)
   for _, item in ipairs(list) do
      if item == value then
         return true
      end
   end
   return false
end

local function default_partition(part_list)
   if type(part_list) ~= "table" then
      return nil
   end
   for name, part in pairs(part_list) do
      local flag = part.flag_default
      if flag == 1 or flag == true then
         return part.name or name
      end
   end
   return nil
end

--- The partitions a job asks for ("ml,debug" -> {"ml", "debug"}); the default partition
--- when it names none (het components after the first name none unless their own
--- #SBATCH line does).
function M.job_partitions(job_desc, part_list)
   local requested = job_desc.partition
   local out = {}
   if type(requested) == "string" and requested ~= "" then
      for name in string.gmatch(requested, "[^,%s]+") do
         out[#out + 1] = name
      end
      return out
   end
   out[1] = default_partition(part_list)
   return out
end

--- Why the job counts as ML training (a sentence) and the partition to name in the mlsub
--- command, or nil when it does not.
function M.ml_reason(site, job_desc, part_list)
   local partitions = M.job_partitions(job_desc, part_list)
   for _, name in ipairs(partitions) do
      if contains(site.ml_partitions, name) then
         return string.format("partition '%s' is for ML training jobs placed by mlsub", name), name
      end
   end
   local explicit = job_desc.partition
   if type(explicit) ~= "string" or explicit == "" then
      explicit = nil
   end
   local name = job_desc.name
   if type(name) == "string" then
      for _, pattern in ipairs(site.ml_job_name_patterns) do
         if string.find(name, pattern) then
            return string.format("the job name '%s' marks an ML training job (site convention '%s')", name, pattern),
               explicit
         end
      end
   end
   local comment = job_desc.comment
   if type(comment) == "string" then
      for _, pattern in ipairs(site.ml_comment_patterns) do
         if string.find(comment, pattern) then
            return string.format("the job's comment marks an ML training job (site convention '%s')", pattern),
               explicit
         end
      end
   end
   return nil
end

-- --- the message ---------------------------------------------------------------------

--- A word as a POSIX shell reads it back (single quotes unless it is plain).
function M.shell_quote(word)
   if word ~= "" and not string.find(word, "[^%w@%%+=:,%./_%-]") then
      return word
   end
   return "'" .. string.gsub(word, "'", "'\\''") .. "'"
end

--- The job script sbatch was given (batch jobs only; nil for --wrap, stdin, srun, salloc).
function M.script_path(job_desc)
   if job_desc.script == nil then
      return nil
   end
   local argv = job_desc.argv
   if type(argv) ~= "table" then
      return nil
   end
   local path = argv[0] or argv[1] -- Slurm passes argv indexed from 0
   if type(path) ~= "string" or path == "" then
      return nil
   end
   return path
end

--- The mlsub command that submits this job properly.
function M.submit_command(site, partition, script)
   local words = { site.submit_command }
   if partition then
      words[#words + 1] = "--partition " .. M.shell_quote(partition)
   end
   words[#words + 1] = script and M.shell_quote(script) or "SCRIPT"
   return table.concat(words, " ")
end

function M.rejection_message(site, reason, tag, partition, script)
   local lines = {}
   if tag.status == "malformed" then
      lines[1] = string.format(
         "mlsched: %s, and this job's comment holds a malformed mlsub decision tag ('%s': %s).",
         reason,
         tag.text,
         tag.problem
      )
   else
      lines[1] = string.format("mlsched: %s, and this job carries no mlsub decision tag.", reason)
   end
   lines[2] = "Submit it with mlsub, which places the workers and parameter servers and tags the job:"
   lines[3] = "    " .. M.submit_command(site, partition, script)
   if not script then
      lines[4] = "(SCRIPT: the job script, with its '# mlsub:' header lines)"
   end
   if site.help ~= "" then
      lines[#lines + 1] = site.help
   end
   return table.concat(lines, "\n")
end

-- --- submit and modify -----------------------------------------------------------------

local function annotate(job_desc, id)
   local note = M.ANNOTATION_PREFIX .. id
   local current = job_desc.admin_comment
   if current == nil or current == "" then
      job_desc.admin_comment = note
   elseif not string.find(";" .. current .. ";", ";" .. note .. ";", 1, true) then
      job_desc.admin_comment = current .. ";" .. note
   end
end

local function describe(job_desc, uid)
   return string.format(
      "job name=%s uid=%s partition=%s het_offset=%s",
      tostring(job_desc.name),
      tostring(uid),
      tostring(job_desc.partition),
      tostring(job_desc.het_job_offset)
   )
end

--- The decision for one submission (or het component): slurm.SUCCESS or slurm.ERROR.
function M.submit(site, job_desc, part_list, submit_uid)
   site = M.with_defaults(site)
   local tag = M.parse_tag(job_desc.comment)
   local reason, partition = M.ml_reason(site, job_desc, part_list)
   if reason and tag.status ~= "ok" and not contains(site.exempt_uids, submit_uid) then
      local message = M.rejection_message(site, reason, tag, partition, M.script_path(job_desc))
      slurm.log_user("%s", message)
      slurm.log_info("mlsched: rejected %s: %s (tag: %s)", describe(job_desc, submit_uid), reason, tag.status)
      return slurm.ERROR
   end
   if tag.status == "ok" and (reason or site.annotate_all_tagged) then
      annotate(job_desc, tag.id)
      slurm.log_info("mlsched: accepted %s, decision %s", describe(job_desc, submit_uid), tag.id)
   end
   return slurm.SUCCESS
end

--- `scontrol update` moving a job into an ML partition needs a tag on the job (or in the
--- same update). Nothing else is checked on modify.
function M.modify(site, job_desc, job_rec, part_list, modify_uid)
   site = M.with_defaults(site)
   local requested = job_desc.partition
   if type(requested) ~= "string" or requested == "" or contains(site.exempt_uids, modify_uid) then
      return slurm.SUCCESS
   end
   for name in string.gmatch(requested, "[^,%s]+") do
      if contains(site.ml_partitions, name) then
         local comment = job_desc.comment
         if comment == nil and job_rec ~= nil then
            comment = job_rec.comment
         end
         local tag = M.parse_tag(comment)
         if tag.status ~= "ok" then
            slurm.log_user(
               "%s",
               string.format(
                  "mlsched: partition '%s' is for ML training jobs placed by mlsub; a job without an mlsub decision tag cannot move there. Submit it with: %s",
                  name,
                  M.submit_command(site, name, nil)
               )
            )
            slurm.log_info("mlsched: refused moving a job to partition %s (uid %s, tag: %s)", name, tostring(modify_uid), tag.status)
            return slurm.ERROR
         end
      end
   end
   return slurm.SUCCESS
end

-- --- Slurm's entry points ----------------------------------------------------------------

M.site_errors = M.validate_site(SITE)

local function site_broken()
   if #M.site_errors == 0 then
      return false
   end
   for _, e in ipairs(M.site_errors) do
      slurm.log_error("mlsched: job_submit.lua site table: %s: %s (every job passes untouched)", e.path, e.message)
   end
   return true
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   if site_broken() then
      return slurm.SUCCESS
   end
   local ok, rc = pcall(M.submit, M.site, job_desc, part_list, submit_uid)
   if not ok then
      slurm.log_error("mlsched: job_submit.lua internal error, the job passes untouched: %s", tostring(rc))
      return slurm.SUCCESS
   end
   return rc
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if site_broken() then
      return slurm.SUCCESS
   end
   local ok, rc = pcall(M.modify, M.site, job_desc, job_rec, part_list, modify_uid)
   if not ok then
      slurm.log_error("mlsched: job_submit.lua internal error, the update passes untouched: %s", tostring(rc))
      return slurm.SUCCESS
   end
   return rc
end

if not site_broken() then
   slurm.log_info("mlsched: job_submit.lua loaded (ML partitions: %s)", table.concat(M.with_defaults(SITE).ml_partitions, ","))
end
return slurm.SUCCESS
