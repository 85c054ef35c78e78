// mprof html: sorts a table.sortable by the column whose header is clicked
// (or focused and Enter pressed). Cells sort by their data-sort value:
// numbers as numbers, a cell without a figure last; other cells by text.
// A first click sorts figures largest first and names A to Z; a second
// click reverses.
(function () {
  "use strict";
  function key(row, column) {
    var cell = row.cells[column];
    var value = cell.getAttribute("data-sort");
    if (value === null) value = cell.textContent.trim();
    return value;
  }
  function compare(a, b, numeric) {
    if (a === b) return 0;
    if (a === "") return 1;
    if (b === "") return -1;
    if (numeric) return Number(a) - Number(b);
    return a < b ? -1 : 1;
  }
  function sort(table, header, column) {
    var numeric = header.classList.contains("num");
    var current = header.getAttribute("aria-sort");
    var descending = current ? current === "ascending" : numeric;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = key(x, column), b = key(y, column);
      if (a === "" || b === "") return compare(a, b, numeric);
      var order = compare(a, b, numeric);
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      header.tabIndex = 0;
      header.addEventListener("click", function () { sort(table, header, column); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sort(table, header, column);
        }
      });
    });
  });
})();
