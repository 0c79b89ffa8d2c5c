(function () {
  var source = document.getElementById("cogscore-matrix");
  if (!source) { return; }
  var m = JSON.parse(source.textContent), explanations = null;
  var panel = document.getElementById("explain-panel");
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function add(parent, tag, text, cls) { return parent.appendChild(el(tag, text, cls)); }
  function named(e, name) {  // a line may break after a "/" and before a "@": a slug has no
    String(name).split(/(?<=\/)|(?=@)/).forEach(function (part, i) {  // other place but
      if (i) { e.appendChild(document.createElement("wbr")); }       // inside a word
      e.appendChild(document.createTextNode(part));
    });
    return e;
  }
  function colour(s) { return "hsl(" + Math.round(s * 120) + ", 65%, 82%)"; }
  function num(v) { return v === null || v === undefined ? "-" : String(v); }
  function explained() {
    if (explanations === null) {
      explanations = JSON.parse(document.getElementById("cogscore-explanations").textContent);
    }
    return explanations;
  }
  function quote(s) {  // as a shell reads it
    s = String(s);
    return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\"'\"'") + "'";
  }
  function command(id) {
    return "cogscore explain " + quote(m.out) + (m.as_of ? " --as-of " + quote(m.as_of) : "") +
      " --episode " + quote(id);
  }
  function count(n) { return Number(n).toLocaleString("en"); }
  function table(parent, header, rows, cls) {
    var t = add(parent, "table", null, cls), h = t.createTHead().insertRow(), b = t.createTBody();
    header.forEach(function (name) { add(h, "th", name); });
    rows.forEach(function (cells) {
      var r = b.insertRow();
      cells.forEach(function (value) { add(r, "td", value); });
    });
    return t;
  }
  function folded(parent, text, more) {
    var p = add(parent, "pre", text === null ? "" : text);
    if (more) { add(parent, "div", "… " + count(more) + " more characters folded", "folded"); }
  }
  function episode(parent, id) {
    var all = explained(), box = add(parent, "div", null, "episode");
    var x = Object.prototype.hasOwnProperty.call(all, id) ? all[id] : null;
    box.setAttribute("data-episode", id);
    add(box, "h4", "episode " + id);
    if (!x) { add(box, "p", "not in this page: " + command(id), "why"); return; }
    var h = x.head;
    add(box, "p", "night " + num(h.dump_date) + ", file " + num(h.file));
    add(box, "p", "score " + num(h.score) + " (formula " + h.category + "=" +
      h.formula_version + (h.formula ? ": " + h.formula : "") + ")");
    if (h.weights && Object.keys(h.weights).length) {
      add(box, "p", "weights: " + Object.keys(h.weights).map(function (k) {
        return k + " " + h.weights[k];
      }).join(", "));
    }
    var names = Object.keys(h.components || {});
    if (names.length) {
      table(box, ["component", "value"], names.map(function (k) {
        return [k, num(h.components[k])];
      }), "components");
    }
    if (h.reported_score !== null && h.reported_score !== undefined) {
      add(box, "p", "the harness reported " + h.reported_score + " (" +
        (h.score_mismatch ? "DIFFERENT" : "equal") + ")");
    }
    if (h.verdict_mismatches) {
      add(box, "p", h.verdict_mismatches + " item verdict(s) differ from the harness's",
        "differs");
    }
    if (x.transcript) {
      add(box, "p", "Transcript: " + x.transcript + (x.command ? ": " + command(id) : "."), "why");
      return;
    }
    var left = x.left || {};
    if (x.items.length) {
      var right = x.items.filter(function (i) { return i.right; }).length;
      add(box, "h5", "items: " + right + " of " + (left.items_total || x.items.length) +
        " right");
      table(box, ["item", "turn", "expected", "answer", "match", "right", "harness said",
                  "differs"],
        x.items.map(function (i) {
          return [i.item_id, i.turn,
                  i.expected + (i.expected_folded ? " … (" + i.expected_folded + " more)" : ""),
                  num(i.answer) + (i.answer_folded ? " … (" + i.answer_folded + " more)" : ""),
                  i.match, i.right ? "right" : "WRONG",
                  i.harness_verdict === null ? "-" : (i.harness_verdict ? "right" : "wrong"),
                  i.differs ? "DIFFERS" : ""];
        }), "items");
      if (left.items_left) {
        add(box, "p", left.items_left + " more item(s) not embedded: " + command(id), "folded");
      }
    }
    var turns = add(box, "details");
    turns.open = true;
    add(turns, "summary", "turns (" + (left.turns_total || x.turns.length) + ")");
    x.turns.forEach(function (t) {
      var extra = ["item_id", "expected", "value", "solved", "round"].filter(function (k) {
        return t[k] !== null && t[k] !== undefined;
      }).map(function (k) { return k + " " + t[k]; });
      add(turns, "div", "[" + num(t.turn) + "] " + t.role + " " + t.kind +
        (extra.length ? " (" + extra.join(", ") + ")" : ""), "turn");
      if (t.content !== null) { folded(turns, t.content, t.content_folded); }
    });
    if (left.turns_left) {
      add(turns, "p", left.turns_left + " later turn(s) (" + count(left.chars_left) +
        " characters) not embedded: " + command(id) + " shows them whole", "folded");
    }
  }
  function open(r, c) {
    var cell = m.cells[r][c];
    panel.textContent = "";
    var close = add(panel, "button", "close ×", "close");
    close.onclick = function () { panel.hidden = true; };
    add(panel, "h3", m.models[c] + " on " + m.tasks[r]);
    add(panel, "p", m.categories[r] + "; task score " + num(m.scores[r][c]) + ", from the night " +
      num(cell.night) + "; " + cell.n + " episode(s)");
    var shown = cell.ids.slice(0, m.explained_per_cell);
    shown.forEach(function (id) { episode(panel, id); });
    if (cell.n > shown.length) {
      var more = add(panel, "div", null, "more");
      add(more, "p", count(cell.n - shown.length) + " more episode(s) in this cell, not " +
        "shown here: cogscore explain --episode ID explains any of them, e.g.");
      cell.ids.slice(shown.length).forEach(function (id) {
        add(more, "pre", command(id), "command");
      });
      if (cell.n > cell.ids.length) {
        var text = function (v) { return "'" + String(v).replace(/'/g, "''") + "'"; };
        add(more, "p", "and " + count(cell.n - cell.ids.length) + " more; every id: " +
          "cogscore sql " + quote(m.out) + " " + quote(
            "SELECT episode_id FROM episode_scores WHERE model = " + text(m.models[c]) +
            " AND task = " + text(m.tasks[r]) + " AND dump_date " +
            (cell.night === null ? "IS NULL" : "= " + text(cell.night)) + " ORDER BY 1"));
      }
    }
    panel.hidden = false;
    panel.scrollTop = 0;
    panel.setAttribute("data-cell", r + "," + c);
  }
  var t = el("table", null, "matrix"), head = t.createTHead().insertRow();
  var columns = [add(head, "th", "category / task")];
  m.models.forEach(function (name) { columns.push(named(add(head, "th"), name)); });
  var groups = [], bodies = {}, rows = [];
  m.tasks.forEach(function (task, r) {
    var category = m.categories[r];
    if (!(category in bodies)) {
      var body = t.appendChild(document.createElement("tbody"));
      var title = add(body.insertRow(), "th", null, "category");
      title.colSpan = m.models.length + 1;
      bodies[category] = {body: body, title: title, rows: []};
      groups.push(category);
      title.onclick = function () { body.classList.toggle("folded"); };
    }
    var tr = bodies[category].body.insertRow();
    tr.className = "task-row";
    add(tr, "td", task, "task");
    m.scores[r].forEach(function (s, c) {
      var td;
      if (s === null) { td = add(tr, "td", "-", "none"); return; }
      td = add(tr, "td", s.toFixed(3), "score");
      td.style.background = colour(s);
      td.title = m.models[c] + " on " + task + ": " + s;
      td.setAttribute("data-r", r);
      td.setAttribute("data-c", c);
    });
    bodies[category].rows.push(r);
    rows[r] = tr;
  });
  groups.forEach(function (category) {
    var g = bodies[category];
    g.title.textContent = category + " (" + g.rows.length + " tasks)";
  });
  var sorted = {column: 0, descending: false};
  function sort(column) {
    sorted.descending = sorted.column === column ? !sorted.descending : column > 0;
    sorted.column = column;
    columns.forEach(function (th, i) { th.classList.toggle("sorted", i === column); });
    groups.forEach(function (category) {
      var g = bodies[category];
      var order = g.rows.slice().sort(function (a, b) {
        var x = column ? m.scores[a][column - 1] : m.tasks[a];
        var y = column ? m.scores[b][column - 1] : m.tasks[b];
        if (x === y) { return m.tasks[a] < m.tasks[b] ? -1 : 1; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        return (x < y ? -1 : 1) * (sorted.descending ? -1 : 1);
      });
      order.forEach(function (r) { g.body.appendChild(rows[r]); });
    });
  }
  columns.forEach(function (th, i) { th.onclick = function () { sort(i); }; });
  t.addEventListener("click", function (event) {
    var td = event.target.closest("td.score");
    if (td) { open(+td.getAttribute("data-r"), +td.getAttribute("data-c")); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { panel.hidden = true; }
  });
  document.getElementById("matrix").appendChild(t);
  window.cogscoreMatrixMs = performance.now();
  document.body.setAttribute("data-matrix", "drawn");
})();
