cd docs && for f in *.txt; do cp -- "$f" "${f%%.*}.md"; done
