--[[ A small test harness for the Lua plugins (Lua 5.1), used by test_*.lua here.

    local H = dofile(ROOT .. "/tests/plugins/harness.lua")(ROOT)
    local T = H.suite()
    T["name"] = function() H.eq(1, 1) end
    H.run(T, arg)            -- arg[2]: a test name to run alone; "--list" lists them

Each test gets a fresh `slurm` stub (slurm_mlsched/plugins/lua/slurm_stub.lua) and loads
the plugin anew, so globals never leak from one test into the next.
--]]

return function(root)
   local H = {}
   local new_stub = dofile(root .. "/slurm_mlsched/plugins/lua/slurm_stub.lua")

   --- Load a plugin (path relative to the checkout) with a fresh stub; `edit`, if given,
   --- rewrites its source first. Returns the plugin's module table and the stub's log.
   function H.load(relative, edit)
      local path = root .. "/" .. relative
      local log
      slurm, log = new_stub()
      mlsched_job_submit, mlsched_cli_filter = nil, nil
      local file = assert(io.open(path, "r"))
      local source = file:read("*a")
      file:close()
      if edit then
         source = edit(source)
      end
      local chunk = assert(loadstring(source, "@" .. path))
      local returned = chunk()
      H.eq(returned, slurm.SUCCESS, "the plugin must return slurm.SUCCESS when loaded")
      return mlsched_job_submit or mlsched_cli_filter, log
   end

   --- A table that behaves like Slurm's job_desc / options proxies: reads fall through to
   --- `fields`, writes land in the second table returned (and are read back).
   function H.proxy(fields)
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

   function H.count(t)
      local n = 0
      for _ in pairs(t) do
         n = n + 1
      end
      return n
   end

   local function show(value)
      if type(value) == "string" then
         return string.format("%q", value)
      elseif type(value) == "table" then
         local keys = {}
         for k in pairs(value) do
            keys[#keys + 1] = tostring(k)
         end
         table.sort(keys)
         local parts = {}
         for _, k in ipairs(keys) do
            local v = value[k]
            if v == nil then
               v = value[tonumber(k)]
            end
            parts[#parts + 1] = k .. "=" .. show(v)
         end
         return "{" .. table.concat(parts, ", ") .. "}"
      end
      return tostring(value)
   end
   H.show = show

   function H.eq(actual, expected, what)
      if actual ~= expected then
         error(string.format("%s: expected %s, got %s", what or "value", show(expected), show(actual)), 2)
      end
   end

   function H.same(actual, expected, what)
      if show(actual) ~= show(expected) then
         error(string.format("%s: expected %s, got %s", what or "table", show(expected), show(actual)), 2)
      end
   end

   function H.contains(text, part, what)
      if type(text) ~= "string" or not string.find(text, part, 1, true) then
         error(string.format("%s: %s does not contain %s", what or "text", show(text), show(part)), 2)
      end
   end

   function H.lacks(text, part, what)
      if type(text) == "string" and string.find(text, part, 1, true) then
         error(string.format("%s: %s contains %s", what or "text", show(text), show(part)), 2)
      end
   end

   function H.write(path, text)
      local file = assert(io.open(path, "w"))
      file:write(text)
      file:close()
   end

   function H.read(path)
      local file = io.open(path, "r")
      if not file then
         return nil
      end
      local text = file:read("*a")
      file:close()
      return text
   end

   function H.exists(path)
      local file = io.open(path, "r")
      if file then
         file:close()
         return true
      end
      return false
   end

   function H.suite()
      local order = {}
      return setmetatable({}, {
         __newindex = function(t, name, fn)
            order[#order + 1] = name
            rawset(t, name, fn)
         end,
         __index = function(_, key)
            if key == "__order" then
               return order
            end
         end,
      })
   end

   --- Run the suite (or the test named by args[2]); exit 1 on any failure.
   function H.run(suite, args)
      local only = args[2]
      if only == "" then
         only = nil
      end
      local names = suite.__order
      if only == "--list" then
         for _, name in ipairs(names) do
            print(name)
         end
         return
      end
      local failed, ran = 0, 0
      for _, name in ipairs(names) do
         if only == nil or only == name then
            ran = ran + 1
            local ok, err = pcall(suite[name])
            if ok then
               print("ok - " .. name)
            else
               failed = failed + 1
               print("not ok - " .. name .. ": " .. tostring(err))
            end
         end
      end
      if ran == 0 then
         print("no test named " .. tostring(only))
         os.exit(2)
      end
      if failed > 0 then
         os.exit(1)
      end
   end

   return H
end
