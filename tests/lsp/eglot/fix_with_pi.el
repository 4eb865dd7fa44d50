;;; fix_with_pi.el --- "Fix with Pi" through eglot, in batch  -*- lexical-binding: t -*-

;; Loaded after README.md's eglot snippet. Opens PI_EGLOT_FILE, gives it the unsaved text
;; PI_EGLOT_UNSAVED, starts eglot from `eglot-server-programs' as `M-x eglot' does, asks for code
;; actions with one diagnostic, executes "Fix with Pi" through eglot's own code-action path, waits
;; for the server's workspace/applyEdit and its answer, then undoes the edit.  What a user would see
;; is written as JSON to PI_EGLOT_RESULT for the test to check.

(require 'cl-lib)
(require 'eglot)
(require 'json)

(defvar pi-test-answers nil "The window/showMessage texts the server sent, newest first.")

(defun pi-test-wait (what predicate)
  "Serve the connection until PREDICATE holds; fail naming WHAT after 60 s."
  (let ((deadline (+ (float-time) 60)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall predicate)
      (error "Timed out waiting for %s; buffer:\n%s\nthe end of eglot's events:\n%s"
             what (buffer-string) (pi-test-events-tail)))))

(defun pi-test-events-tail ()
  "The last messages eglot exchanged with the server, to say what a timed-out wait missed."
  (let ((server (ignore-errors (eglot-current-server))))
    (if (not server)
        "(no server)"
      ;; The daemon's threads' and tasks' stacks into its log (modes/stack_dumps.py): where a run
      ;; that sent nothing is stuck.
      (let ((pid (ignore-errors (process-id (jsonrpc--process server)))))
        (when pid
          (signal-process pid 'SIGUSR1)
          (signal-process pid 'SIGUSR2)
          (let ((until (+ (float-time) 3)))
            (while (< (float-time) until) (accept-process-output nil 0.1)))))
      (concat
       (or (ignore-errors
             (with-current-buffer (jsonrpc-events-buffer server)
               (buffer-substring-no-properties (max (point-min) (- (point-max) 2500)) (point-max))))
           "(no events buffer)")
       ;; The daemon's own log (its stderr), which says whether the run started at all.
       (mapconcat (lambda (buffer)
                    (with-current-buffer buffer
                      (format "\n%s:\n%s" (buffer-name)
                              (buffer-substring-no-properties (max (point-min) (- (point-max) 12000)) (point-max)))))
                  (cl-remove-if-not (lambda (b) (string-match-p "stderr" (buffer-name b))) (buffer-list))
                  "")))))

(defun pi-test-diagnostic (line from to text)
  "A flymake diagnostic as eglot keeps the ones a server published, at LINE FROM..TO."
  (let ((beg (save-excursion (goto-char (point-min)) (forward-line line) (+ (point) from)))
        (lsp `(:range (:start (:line ,line :character ,from) :end (:line ,line :character ,to))
               :message ,text)))
    (flymake-make-diagnostic (current-buffer) beg (+ beg (- to from)) :error text
                             `((eglot-lsp-diag . ,lsp)))))

(advice-add 'eglot-handle-notification :before
            (lambda (_server method &rest args)
              (when (eq method 'window/showMessage)
                (push (plist-get args :message) pi-test-answers))))

(condition-case err
    (let ((result nil))
      ;; eglot 1.9 asks "Server wants to edit ... Proceed?" before every server edit by default.
      (setq eglot-confirm-server-initiated-edits nil)
      (find-file (getenv "PI_EGLOT_FILE"))
      (erase-buffer)
      (insert (getenv "PI_EGLOT_UNSAVED"))  ; unsaved: only the editor has this text
      (undo-boundary)
      (apply #'eglot (eglot--guess-contact))
      (pi-test-wait "eglot to manage the buffer" #'eglot-managed-p)
      (let* ((diagnostic (pi-test-diagnostic 1 12 16 "Misspelled word: Helo"))
             (actions
              ;; eglot 1.9 sends only diagnostics its own server published (flymake's data
              ;; `eglot-lsp-diag'); pi-rpc publishes none, so this one stands in for another
              ;; checker's.
              (cl-letf (((symbol-function 'flymake-diagnostics) (lambda (&rest _) (list diagnostic))))
                (eglot-code-actions (flymake-diagnostic-beg diagnostic) (flymake-diagnostic-end diagnostic)))))
        (push (cons 'titles (vconcat (mapcar (lambda (a) (plist-get a :title)) actions))) result)
        ;; As if the user picked it from the menu `M-x eglot-code-actions' offers.
        (let ((last-nonmenu-event ?\r))
          (cl-letf (((symbol-function 'completing-read) (lambda (&rest _) "Fix with Pi")))
            (eglot--read-execute-code-action actions (eglot-current-server)))))
      (pi-test-wait "the edit" (lambda () (string-match-p "Hello" (buffer-string))))
      (push (cons 'fixed (buffer-string)) result)
      (pi-test-wait "the answer" (lambda () pi-test-answers))
      (push (cons 'answers (vconcat (reverse pi-test-answers))) result)
      (undo-boundary)
      (undo)
      (push (cons 'undone (buffer-string)) result)
      (push (cons 'modified (if (buffer-modified-p) t :json-false)) result)
      (eglot-shutdown (eglot-current-server))
      (with-temp-file (getenv "PI_EGLOT_RESULT") (insert (json-encode result)))
      (kill-emacs 0))
  (error (message "fix_with_pi.el failed: %S" err)
         (kill-emacs 1)))
