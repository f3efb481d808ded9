tr -cs 'A-Za-z' '\n' < text.txt | grep . | sort | uniq -c | sort -k1,1nr -k2 | head -3 | awk '{print $1, $2}' > top3.txt
