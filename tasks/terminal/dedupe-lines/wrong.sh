sort -u list.txt > unique.txt
