--[[ A stand-in for the `slurm` table Slurm gives its Lua plugins (job_submit/lua and
cli_filter/lua, Slurm 22.05 and 24.11), for `mlsub plugins check` and the Lua unit tests.

    local new_stub = dofile("slurm_stub.lua")
    slurm, log = new_stub()     -- log.user, log.info, log.error: the messages, in order

Like Slurm's, the log functions format their arguments with string.format, so a plugin
that passes a message with a '%' in it as the format fails here as it would in slurmctld.
--]]

return function()
   local log = { user = {}, info = {}, error = {} }
   local slurm = {
      SUCCESS = 0,
      ERROR = -1,
      FAILURE = -1,
      NO_VAL = 4294967294,
      NO_VAL16 = 65534,
      NO_VAL64 = 18446744073709551614,
      INFINITE = 4294967295,
      MEM_PER_CPU = 9223372036854775808,
      ESLURM_ACCESS_DENIED = 2002,
      ESLURM_INVALID_PARTITION_NAME = 2000,
      CLUSTER_NAME = "stub",
   }
   local function keep(list)
      return function(...)
         list[#list + 1] = string.format(...)
      end
   end
   slurm.log_user = keep(log.user)
   slurm.user_msg = function(msg)
      log.user[#log.user + 1] = msg
   end
   slurm.log_error = keep(log.error)
   slurm.error = function(msg)
      log.error[#log.error + 1] = msg
   end
   for _, name in ipairs({ "log_info", "log_verbose", "log_debug", "log_debug2", "log_debug3", "log_debug4" }) do
      slurm[name] = keep(log.info)
   end
   slurm.log = function(_, msg)
      log.info[#log.info + 1] = msg
   end
   slurm.time_str2mins = function(text)
      return tonumber(text) or -1
   end
   -- cli_filter/lua only
   slurm.json_cli_options = function()
      return "{}"
   end
   slurm.json_env = function()
      return "{}"
   end
   local stored = {}
   slurm.cli_store = function(key, value)
      stored[key] = value
   end
   slurm.cli_retrieve = function(key)
      return stored[key]
   end
   return slurm, log
end
