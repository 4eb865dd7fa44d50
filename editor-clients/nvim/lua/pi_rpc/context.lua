-- Context written into a prompt as `@` mentions, expanded on send: each mention is replaced by a
-- short reference and what it stands for (pi_rpc.mentions) is appended after the text, once
-- each. `#buffer` and `#diagnostics` are the older spellings of `@buffer` and `@diagnostics`.
-- The input buffer's 'omnifunc' completes the mention words, paths and LSP symbols.
local mentions = require("pi_rpc.mentions")

local M = {}

-- The mention words and what each completes to, in the order the menu shows them.
local WORDS = {
  { "buffer", "the buffer, unsaved text included" },
  { "selection", "the last visual selection" },
  { "diagnostics", "the buffer's diagnostics" },
  { "diagnostics:all", "every buffer's diagnostics" },
  { "quickfix", "the quickfix list" },
  { "terminal", "the last lines of the last terminal" },
  { "symbol:", "an LSP workspace symbol" },
}
local LEGACY = { "buffer", "diagnostics" }
-- Why a mention word can stand for nothing.
local EMPTY = {
  selection = "no visual selection in that buffer yet",
  terminal = "no terminal buffer",
}
-- Left off a mention that is not one with them: "see @a.py, then" mentions `a.py`.
local TRAILING = "[,.;:!?%)%]'\"]+$"

--- The mention `word` (without its `@`) stands for, nil when it is none (a mail address, a
--- path that does not exist, a symbol no server knows).
---@param word string
---@param origin integer the buffer the input was opened from
---@return pi_rpc.Mention?
local function resolve(word, origin)
  if word == "buffer" then
    return mentions.buffer(origin)
  elseif word == "selection" then
    return mentions.selection(origin)
  elseif word == "diagnostics" then
    return mentions.diagnostics(origin)
  elseif word == "diagnostics:all" then
    return mentions.diagnostics(nil)
  elseif word == "quickfix" then
    return mentions.quickfix()
  elseif word == "terminal" then
    return mentions.terminal()
  elseif vim.startswith(word, "symbol:") and #word > #"symbol:" then
    return mentions.symbol(word:sub(#"symbol:" + 1), origin)
  elseif vim.fn.isdirectory(word) == 1 then
    return mentions.folder(word)
  elseif vim.fn.filereadable(word) == 1 then
    return mentions.file(word)
  end
  return nil
end

--- The prompt text with each mention replaced by its reference and the content of each
--- appended, once per mention however often it is written.
---@param text string
---@param origin integer? the buffer the input was opened from
---@return string
function M.expand(text, origin)
  if not origin or not vim.api.nvim_buf_is_valid(origin) then
    return text
  end
  local found = {} ---@type table<string, pi_rpc.Mention|false>
  local order = {} ---@type string[]
  local function lookup(word)
    if found[word] == nil then
      found[word] = resolve(word, origin) or false
      if found[word] then
        order[#order + 1] = word
      end
    end
    return found[word] or nil
  end
  local function replace(word)
    local mention = lookup(word)
    if mention then
      return mention.ref
    end
    local bare = word:gsub(TRAILING, "")
    mention = bare ~= word and bare ~= "" and lookup(bare) or nil
    if mention then
      return mention.ref .. word:sub(#bare + 1)
    end
    return nil -- not a mention: the text stays as written
  end
  local expanded = text:gsub("%f[%S]@(%S+)", replace)
  for word, mention in pairs(found) do
    if not mention and (EMPTY[word] or vim.startswith(word, "symbol:")) then
      -- A mention word that found nothing is sent as written; say why it carried nothing.
      local why = EMPTY[word] or "no LSP server knows it"
      require("pi_rpc.util").notify(("@%s: %s"):format(word, why), vim.log.levels.WARN)
    end
  end
  expanded = expanded:gsub("#(%a+)", function(word)
    if vim.tbl_contains(LEGACY, word) then
      return lookup(word).ref
    end
  end)
  if #order == 0 then
    return text
  end
  local blocks = {}
  for _, word in ipairs(order) do
    blocks[#blocks + 1] = ""
    vim.list_extend(blocks, found[word].block)
  end
  return expanded .. "\n" .. table.concat(blocks, "\n")
end

---@param query string
---@param origin integer
---@return table[] complete-items
local function symbol_items(query, origin)
  local symbols = require("pi_rpc.symbols")
  local items = {}
  for _, s in ipairs(symbols.query(query, origin)) do
    local where = s.location and s.location.uri and vim.fn.fnamemodify(vim.uri_to_fname(s.location.uri), ":.") or ""
    items[#items + 1] = { word = "@symbol:" .. s.name, menu = symbols.kind_name(s) .. " " .. where }
  end
  return items
end

--- 'omnifunc' of the input buffer: `@` completes the mention words, paths and (after
--- `@symbol:`) the LSP servers' workspace symbols; `#` the older words.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local start = line:find("[@#][^%s@#]*$")
    return start and start - 1 or -3 -- -3: cancel silently
  end
  local sigil, rest = base:sub(1, 1), base:sub(2)
  local items = {}
  if sigil == "#" then
    for _, word in ipairs(LEGACY) do
      if vim.startswith(word, rest) then
        items[#items + 1] = "#" .. word
      end
    end
  elseif sigil == "@" then
    local origin = vim.b.pi_rpc_origin or vim.api.nvim_get_current_buf()
    if vim.startswith(rest, "symbol:") then
      return symbol_items(rest:sub(#"symbol:" + 1), origin)
    end
    for _, word in ipairs(WORDS) do
      if vim.startswith(word[1], rest) then
        items[#items + 1] = { word = "@" .. word[1], menu = word[2] }
      end
    end
    for _, path in ipairs(vim.fn.getcompletion(rest, "file")) do
      items[#items + 1] = "@" .. path
    end
  end
  return items
end

return M
