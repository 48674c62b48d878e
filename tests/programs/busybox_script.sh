# Deterministic shell workload for busybox sh (run as: busybox sh busybox_script.sh DIR).
# Exercises pipes, ls, find, sort, sed, awk, wc, cat, head, tr, uniq, grep,
# variables, loops, functions, $(...), redirections, here-docs, background jobs.
set -e
BB=/bin/busybox
root="$1"
if [ -z "$root" ] || [ ! -d "$root" ]; then
    echo "usage: busybox sh $0 DIR" >&2
    exit 2
fi
cd "$root"
mkdir -p tree/a/b tree/c tree/d/e/f

# --- functions and loops -------------------------------------------------
make_file() {
    # make_file PATH N: write N numbered lines
    _p="$1"; _n="$2"; _i=1
    : > "$_p"
    while [ "$_i" -le "$_n" ]; do
        echo "line $_i of $_p" >> "$_p"
        _i=$((_i + 1))
    done
}

count=0
for f in tree/a/one.txt tree/a/b/two.txt tree/c/three.txt tree/d/e/f/four.txt tree/d/five.log; do
    count=$((count + 1))
    make_file "$f" $((count * 3))
done
echo "created $count files"

# --- here-doc into a file --------------------------------------------------
cat > tree/c/fruits.txt <<END
banana
apple
cherry
apple
banana
banana
date
END
name=world
cat <<END
here-doc says hello $name
  the sum is $((2 + 3 * 4))
END
cat <<'END'
quoted here-doc keeps $name literal
END

# --- listing ---------------------------------------------------------------
echo "== find"
find tree | sort
echo "== find -type f with sizes"
find tree -type f | sort | while read -r f; do
    printf '%s %s\n' "$(wc -c < "$f" | tr -d ' ')" "$f"
done
echo "== ls -1R"
ls -1R tree
echo "== ls -l (mode, file size, name)"
ls -l tree/a tree/c | awk '/^total/ { next } /^d/ { print $1, $NF; next } NF >= 9 { print $1, $5, $NF; next } { print }'

# --- text processing pipelines --------------------------------------------
echo "== sort | uniq -c"
sort tree/c/fruits.txt | uniq -c | sort -k1,1nr -k2 | sed 's/^ *//'
echo "== tr upper"
head -n 3 tree/c/fruits.txt | tr 'a-z' 'A-Z'
echo "== grep -c / grep -l"
grep -c line tree/a/b/two.txt
grep -rl 'of tree/d' tree | sort
echo "== sed substitutions"
sed -e 's/line \([0-9]*\) of \(.*\)/\2:\1/' -e '/:[2-9]$/d' tree/c/three.txt
echo "== awk sums"
cat tree/*/*.txt tree/*/*/*.txt tree/d/e/f/*.txt | awk '{ n++; s += $2 } END { printf "lines=%d sum=%d\n", n, s }'
echo "== wc"
find tree -type f -name '*.txt' | sort | xargs wc -l | sed 's/^ *//'
echo "== word frequencies"
cat tree/d/five.log | tr ' ' '\n' | grep -v '^[0-9]*$' | sort | uniq -c | sort -k1,1nr -k2 | head -n 4 | sed 's/^ *//'

# --- subshells and command substitution -----------------------------------
total=$(cat tree/c/fruits.txt | wc -l | tr -d ' ')
uniq_count=$(sort -u tree/c/fruits.txt | wc -l | tr -d ' ')
echo "fruits: total=$total unique=$uniq_count"
( cd tree/d && echo "in subshell: $(pwd | sed 's|.*/||')" )
echo "after subshell: $(basename "$(pwd)")" | sed 's/after subshell: .*/after subshell: ok/'
nested=$(echo "$(echo "$(echo deep)")")
echo "nested: $nested"

# --- redirections -----------------------------------------------------------
{ echo out1; echo err1 >&2; echo out2; } > out.txt 2> err.txt
echo "out.txt: $(tr '\n' ',' < out.txt)"
echo "err.txt: $(cat err.txt)"
ls /nonexistent-dir-for-picos-test 2>> err.txt || echo "ls failed as expected ($?)"
wc -l < err.txt | tr -d ' '
exec 3> fd3.txt
echo "via fd 3" >&3
exec 3>&-
cat fd3.txt

# --- background jobs ----------------------------------------------------------
slow_sum() {
    # slow_sum N OUT: sum 1..N into OUT
    _s=0; _i=1
    while [ "$_i" -le "$1" ]; do _s=$((_s + _i)); _i=$((_i + 1)); done
    echo "$_s" > "$2"
}
slow_sum 500 bg1.txt &
pid1=$!
slow_sum 1000 bg2.txt &
pid2=$!
( sleep 0.1; echo "sleeper done" > bg3.txt ) &
wait $pid1
wait $pid2
wait
echo "bg: $(cat bg1.txt) $(cat bg2.txt) $(cat bg3.txt)"

# --- case, string ops, arithmetic ---------------------------------------------
for w in apple 42 tree/a x; do
    case "$w" in
        [0-9]*) kind=number ;;
        */*) kind=path ;;
        ?) kind=char ;;
        *) kind=word ;;
    esac
    echo "$w is a $kind (length ${#w})"
done
file=archive.tar.gz
echo "${file%.gz} ${file%%.*} ${file#*.} ${file##*.}"
i=0; acc=""
until [ $i -ge 5 ]; do acc="$acc$i"; i=$((i + 1)); done
echo "acc=$acc"

# --- exit status of a pipeline and of functions ---------------------------------
false_fn() { return 3; }
if false_fn; then echo "unexpected"; else echo "false_fn returned $?"; fi
echo "ok" | grep -q ok && echo "grep -q ok"
echo "done"
