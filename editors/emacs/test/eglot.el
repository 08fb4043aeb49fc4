;;; eglot.el --- batch test of the Emacs set-up in docs/editors.md  -*- lexical-binding: t -*-
;;
;; Run by scripts/test-editors.sh when an Emacs with eglot is installed:
;;
;;   emacs --batch -q -l CONFIG.el -l editors/emacs/test/eglot.el
;;
;; where CONFIG.el is the ```elisp block of docs/editors.md, `op2' is on
;; PATH, and OP2_FILE names a copy of an example with an unknown name
;; (`p_c').  Checks: the mode, diagnostics through flymake, hover, an edit
;; clearing the error, and build on save.  Exits non-zero on failure.

(require 'eglot)
(require 'flymake)
(require 'seq)

(defvar op2-test-failures 0)

(defun op2-test-wait (what pred &optional secs)
  "Wait up to SECS (default 20) seconds for PRED, naming WHAT on timeout."
  (let ((deadline (+ (float-time) (or secs 20))))
    (while (not (funcall pred))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defmacro op2-test (name &rest body)
  "Run BODY as the check NAME."
  (declare (indent 1))
  `(condition-case err
       (progn ,@body (princ (format "ok - %s\n" ,name)))
     (error (setq op2-test-failures (1+ op2-test-failures))
            (princ (format "not ok - %s: %S\n" ,name err)))))

(let* ((file (getenv "OP2_FILE"))
       (graph (concat (file-name-sans-extension file) ".graph.xml")))
  (find-file file)
  (op2-test "op2-mode for .op2 files"
    (unless (eq major-mode 'op2-mode) (error "Major mode is %s" major-mode)))
  (op2-test "eglot starts op2 lsp"
    ;; eglot-ensure waits for a command loop that batch Emacs does not run.
    (unless (eglot-current-server) (apply #'eglot (eglot--guess-contact)))
    (op2-test-wait "the server" #'eglot-current-server))
  (op2-test "diagnostics arrive through flymake"
    (op2-test-wait "an E101"
                   (lambda ()
                     (seq-find (lambda (d) (string-match-p "E101" (flymake-diagnostic-text d)))
                               (flymake-diagnostics)))))
  (op2-test "hover on a dat"
    (goto-char (point-min))
    (search-forward "p_a[pick_a")
    (backward-char 10)
    (let* ((hover (jsonrpc-request (eglot-current-server) :textDocument/hover
                                   (eglot--TextDocumentPositionParams)))
           (contents (and hover (plist-get hover :contents))))
      (if (null hover)
          (princ "PENDING hover: null\n")
        (unless (string-match-p "p_a" (format "%S" contents))
          (error "Hover without p_a: %S" contents)))))
  (op2-test "an edit clears the error"
    (goto-char (point-min))
    (search-forward "p_c")
    (replace-match "p_b")
    ;; Batch Emacs runs no idle timers: send the change and re-check by hand.
    (eglot--signal-textDocument/didChange)
    (op2-test-wait "the E101 to go"
                   (lambda ()
                     (flymake-start)
                     (accept-process-output nil 0.1)
                     (not (seq-find (lambda (d) (string-match-p "E101" (flymake-diagnostic-text d)))
                                    (flymake-diagnostics))))))
  (op2-test "build on save writes the graph"
    (when (file-exists-p graph) (delete-file graph))
    (save-buffer)
    (op2-test-wait graph (lambda () (file-exists-p graph))))
  (op2-test "M-x op2-build builds now"
    (delete-file graph)
    (call-interactively #'op2-build)
    (op2-test-wait graph (lambda () (file-exists-p graph))))
  (op2-test "M-x op2-show-device-type"
    (let ((before (current-message)))
      (op2-show-device-type "pairs")
      (op2-test-wait "the answer" (lambda () (or (get-buffer "*op2 device type pairs*")
                                                 (not (equal (current-message) before))))))
    (let ((buffer (get-buffer "*op2 device type pairs*")))
      (if (null buffer)
          (princ "PENDING op2.showDeviceType: null for set pairs\n")
        (with-current-buffer buffer
          (unless (string-match-p "pairs" (buffer-string))
            (error "Device type text without the set: %s" (buffer-string)))))))
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (princ (format "emacs: %d failed\n" op2-test-failures))
  (kill-emacs (if (zerop op2-test-failures) 0 1)))
