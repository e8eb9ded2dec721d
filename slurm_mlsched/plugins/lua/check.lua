--[[ check.lua PLUGIN: what `mlsub plugins check` runs, with the Lua interpreter Slurm links
(lua5.1 on Debian 12 and 13).

Loads PLUGIN the way slurmctld (job_submit/lua) or sbatch (cli_filter/lua) does, with a
stubbed `slurm` table (slurm_stub.lua, next to this file), and reports, one per line,
fields separated by tabs:

    kind    job_submit | cli_filter
    error   syntax | load | return | missing | site:<setting> | smoke    <message>
    note    <message>

Syntax and load errors carry Lua's "PLUGIN:LINE: message". Nothing here runs the plugin's
plan command or touches Slurm: the sample calls use jobs without a script.
--]]

local plugin = arg[1]
local here = string.match(arg[0], "^(.*)/[^/]*$") or "."
local new_stub = dofile(here .. "/slurm_stub.lua")
local LOG

local function emit(...)
   local fields = { ... }
   for i, field in ipairs(fields) do
      fields[i] = string.gsub(tostring(field), "[\t\r\n]", " ")
   end
   io.write(table.concat(fields, "\t"), "\n")
end

local function fresh_stub()
   slurm, LOG = new_stub()
end

local REQUIRED = {
   job_submit = { "slurm_job_submit", "slurm_job_modify" },
   cli_filter = { "slurm_cli_setup_defaults", "slurm_cli_pre_submit", "slurm_cli_post_submit" },
}

-- A table that behaves like Slurm's job_desc/options proxies: reads fall through to
-- `fields`, writes are recorded (and read back).
local function proxy(fields)
   local writes = {}
   local object = setmetatable({}, {
      __index = fields,
      __newindex = function(_, key, value)
         writes[key] = value
         fields[key] = value
      end,
   })
   return object, writes
end

local function logged_errors(what)
   for _, message in ipairs(LOG.error) do
      emit("error", "smoke", what .. " logged an error: " .. message)
   end
end

local function call(what, fn, ...)
   local ok, result = pcall(fn, ...)
   if not ok then
      emit("error", "smoke", what .. " raised: " .. tostring(result))
      return nil
   end
   logged_errors(what)
   return result
end

local function smoke_job_submit(module)
   local site = module and module.site or {}
   local ml = (type(site.ml_partitions) == "table" and site.ml_partitions[1]) or nil
   local part_list = { debug = { name = "debug", flag_default = 1 } }
   if ml then
      part_list[ml] = { name = ml, flag_default = 0 }
   end
   local samples = {
      { label = "an untagged job", fields = { name = "check", partition = ml, script = "#!/bin/sh\n", argv = { [0] = "/tmp/job.sh" } } },
      { label = "a tagged job", fields = { name = "check", partition = ml, comment = "mlsched:decision=1:0123456789ab", script = "#!/bin/sh\n" } },
      { label = "a job in another partition", fields = { name = "check", partition = "debug" } },
      { label = "a job with no fields", fields = {} },
   }
   for _, sample in ipairs(samples) do
      fresh_stub()
      local job_desc, writes = proxy(sample.fields)
      local what = "slurm_job_submit(" .. sample.label .. ")"
      local rc = call(what, slurm_job_submit, job_desc, part_list, 1000)
      if module and ml and sample.label == "an untagged job" then
         if rc ~= slurm.ERROR or #LOG.user == 0 then
            emit("error", "smoke", what .. " in partition " .. ml .. " was not rejected with a message")
         end
      elseif module and ml and sample.label == "a tagged job" and writes.admin_comment == nil then
         emit("error", "smoke", what .. " was not annotated (admin_comment)")
      end
   end
   fresh_stub()
   call("slurm_job_modify", slurm_job_modify, proxy({}), proxy({}), part_list, 1000)
end

local function smoke_cli_filter()
   local cases = {
      { label = "sbatch", fields = { type = "sbatch", partition = "ml", argv = {} } },
      { label = "srun", fields = { type = "srun", argv = { "true" } } },
      { label = "salloc", fields = { type = "salloc" } },
   }
   fresh_stub()
   call("slurm_cli_setup_defaults", slurm_cli_setup_defaults, proxy({ type = "sbatch" }), true)
   for _, case in ipairs(cases) do
      fresh_stub()
      call("slurm_cli_pre_submit(" .. case.label .. ")", slurm_cli_pre_submit, proxy(case.fields), 0)
   end
   fresh_stub()
   call("slurm_cli_post_submit", slurm_cli_post_submit, 0, 1, 4294967294)
end

local function main()
   fresh_stub()
   local chunk, syntax_error = loadfile(plugin)
   if not chunk then
      emit("error", "syntax", syntax_error)
      return
   end
   local ok, returned = pcall(chunk)
   if not ok then
      emit("error", "load", returned)
      return
   end
   local code = tonumber(returned)
   if code and code ~= 0 then
      emit("error", "return", "the script returned " .. tostring(returned) .. " when loaded; Slurm needs slurm.SUCCESS (0) or nothing")
   end
   local load_log = LOG.error
   local kind
   if type(slurm_job_submit) == "function" or type(slurm_job_modify) == "function" then
      kind = "job_submit"
   elseif type(slurm_cli_pre_submit) == "function" or type(slurm_cli_setup_defaults) == "function" then
      kind = "cli_filter"
   else
      emit("error", "missing", "defines neither slurm_job_submit (job_submit/lua) nor slurm_cli_pre_submit (cli_filter/lua)")
      return
   end
   emit("kind", kind)
   local missing = false
   for _, name in ipairs(REQUIRED[kind]) do
      if type(_G[name]) ~= "function" then
         emit("error", "missing", "required function " .. name .. " is not defined")
         missing = true
      end
   end
   local module = kind == "job_submit" and mlsched_job_submit or mlsched_cli_filter
   local bad_site = false
   if type(module) == "table" and type(module.validate_site) == "function" then
      for _, problem in ipairs(module.validate_site(module.site)) do
         emit("error", "site:" .. tostring(problem.path), problem.message)
         bad_site = true
      end
   else
      module = nil
      emit("note", "not an mlsched plugin: its settings were not checked")
   end
   if not bad_site then -- else the plugin logged the same problems while loading
      for _, message in ipairs(load_log) do
         emit("error", "load", "logged while loading: " .. message)
      end
   end
   if missing or bad_site then
      return -- the sample calls would only repeat these problems
   end
   if kind == "job_submit" then
      smoke_job_submit(module)
   else
      smoke_cli_filter()
   end
end

main()
