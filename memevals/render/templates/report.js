(function(){
"use strict";
function num(td){var v=td.getAttribute("data-value");return v===null||v===""?null:parseFloat(v);}
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("th[data-sort]").forEach(function(th){
    th.addEventListener("click",function(){
      var col=parseInt(th.getAttribute("data-sort"),10);
      var asc=th.getAttribute("data-dir")!=="asc";
      table.querySelectorAll("th[data-sort]").forEach(function(h){h.removeAttribute("data-dir");});
      th.setAttribute("data-dir",asc?"asc":"desc");
      var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col],y=b.cells[col];var nx=num(x),ny=num(y);
        var r;
        if(x.hasAttribute("data-value")||y.hasAttribute("data-value")){
          if(nx===null&&ny===null)r=0;else if(nx===null)return 1;else if(ny===null)return -1;
          else r=nx-ny;
        } else r=x.textContent.localeCompare(y.textContent);
        return asc?r:-r;});
      rows.forEach(function(r){body.appendChild(r);});
    });});});
var DATA=JSON.parse(document.getElementById("report-data").textContent);
var ITEMS=null;  // the memory results, parsed when a question is first opened
function items(){if(ITEMS===null)ITEMS=JSON.parse(
  document.getElementById("report-items").textContent);return ITEMS;}
var LIMIT=500;
var tbody=document.querySelector("#questions-table tbody");
if(!tbody)return;
var rows=[];
DATA.questions.forEach(function(q,qi){q.r.forEach(function(r,ri){rows.push([qi,ri]);});});
function verdict(r){if(r.err)return "errored";if(r.s===null)return "unscored";
  if(r.s>=1)return "right";if(r.s<=0)return "wrong";return "partial";}
function fmt(v){return v===null||v===undefined?"\u2013":(Math.round(v*1000)/1000).toFixed(3);}
/* a sample's score: a whole number above 1 is a count (prompt tokens, k), shown whole */
function fmtSample(v){return typeof v==="number"&&Number.isInteger(v)&&Math.abs(v)>1?String(v):fmt(v);}
function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;
  if(cls)e.className=cls;return e;}
var sel={b:document.getElementById("q-benchmark"),c:document.getElementById("q-category"),
  run:document.getElementById("q-run"),v:document.getElementById("q-verdict"),
  f:document.getElementById("q-flipped"),s:document.getElementById("q-search")};
var cats={};DATA.questions.forEach(function(q){cats[q.c]=1;});
Object.keys(cats).sort().forEach(function(c){var o=el("option",c);sel.c.appendChild(o);});
function matches(q,r){
  if(sel.b.value&&q.b!==sel.b.value)return false;
  if(sel.c.value&&q.c!==sel.c.value)return false;
  if(sel.run.value!==""&&String(r.run)!==sel.run.value)return false;
  if(sel.v.value&&verdict(r)!==sel.v.value)return false;
  if(sel.f.checked&&!r.flip.length)return false;
  var s=sel.s.value.trim().toLowerCase();
  if(s){var hay=(q.q+"\n"+q.gold+"\n"+r.reply+"\n"+q.id).toLowerCase();
    if(hay.indexOf(s)<0)return false;}
  return true;}
function render(){
  tbody.textContent="";var shown=0,total=0;
  rows.forEach(function(p){var q=DATA.questions[p[0]],r=q.r[p[1]];
    if(!matches(q,r))return;total++;if(shown>=LIMIT)return;shown++;
    var tr=document.createElement("tr");tr.setAttribute("data-q",p[0]);
    tr.setAttribute("data-id",q.id);
    tr.appendChild(el("td",q.b));tr.appendChild(el("td",q.c));tr.appendChild(el("td",q.q||q.id));
    tr.appendChild(el("td",DATA.runs[r.run].name));
    var sc=el("td",fmt(r.s),"num");tr.appendChild(sc);
    tr.appendChild(el("td",r.label||verdict(r)));
    tr.appendChild(el("td",r.flip.length?"flipped":""));
    tr.addEventListener("click",function(){open(p[0]);});
    tbody.appendChild(tr);});
  document.getElementById("q-count").textContent=total+" matching";
  document.getElementById("q-more").textContent=total>shown?("showing the first "+shown+
    " of "+total+"; narrow the filter to see the rest"):"";}
function open(qi){var q=DATA.questions[qi];var d=document.getElementById("q-detail");
  d.textContent="";d.hidden=false;
  d.appendChild(el("h3",q.b+" \u00b7 "+q.c+" \u00b7 "+q.id));
  function line(label,text,cls){var p=el("p");p.appendChild(el("b",label));
    p.appendChild(el("span",text,cls));d.appendChild(p);}
  line("Question: ",q.q,"question");line("Gold: ",q.gold,"gold");
  if(q.ev.length)line("Evidence: ",q.ev.join(", "),"evidence");
  var t=el("table");var h=el("tr");
  ["run","reply","scores","judge","retrieved / memory results (green: evidence)"].forEach(
    function(x){
    h.appendChild(el("th",x));});
  t.appendChild(h);
  q.r.forEach(function(r){var tr=el("tr");var run=DATA.runs[r.run];
    var name=el("td");name.appendChild(el("span",run.name));
    if(DATA.view&&run.framework==="inspect"){var a=el("a"," [view]");
      a.href=DATA.view+"/index.html#/logs/"+encodeURIComponent(run.log)+"/samples/sample/"+
        encodeURIComponent(q.id)+"/1";
      name.appendChild(a);}
    tr.appendChild(name);tr.appendChild(el("td",r.reply,"reply"));
    tr.appendChild(el("td",Object.keys(r.scores).map(function(k){
      return k+"="+fmtSample(r.scores[k]);}).join(" ")));
    tr.appendChild(el("td",r.label||"\u2013"));
    var ret=el("td","","retrieved");r.ret.forEach(function(id){
      ret.appendChild(el("span",id+" ",q.ev.indexOf(id)>=0?"hit":"miss"));});
    if(r.mem.length){var ol=el("ol","","mem");r.mem.forEach(function(mi){
      var m=items()[mi];var li=el("li");var hit=false;
      m[1].forEach(function(id){var h=q.ev.indexOf(id)>=0;hit=hit||h;
        li.appendChild(el("span",id,h?"hit id":"miss id"));});
      li.appendChild(el("span",m[0],"mem-text"));
      if(m.length>2)li.appendChild(el("small"," \u2026 (cut; "+m[2]+" characters)"));
      li.setAttribute("data-hit",hit?"1":"0");ol.appendChild(li);});
      ret.appendChild(ol);}
    // an agent's stored memory (context=agent): each file as the log cut it, with its length
    if(r.files){ret.appendChild(el("p","stored memory","files-title"));
      var fl=el("ol","","mem files");r.files.forEach(function(fi){var m=items()[fi];
      var li=el("li");li.appendChild(el("b",m[3],"file-path"));
      li.appendChild(el("small"," ("+m[2]+" characters"+
        (Array.from(m[0]).length<m[2]?", cut":"")+")","file-chars"));
      li.appendChild(el("div",m[0],"mem-text"));fl.appendChild(li);});
      ret.appendChild(fl);}
    tr.appendChild(ret);t.appendChild(tr);});
  d.appendChild(t);d.scrollIntoView();}
// the search box redraws as one types ("change" would redraw again on blur, under a click)
Object.keys(sel).forEach(function(k){
  sel[k].addEventListener(k==="s"?"input":"change",render);});
render();
})();
