awk '!seen[$0]++' list.txt > unique.txt
